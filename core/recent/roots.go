package recent

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/config"
)

// Caps of ScanRoots: a root holding thousands of entries (a home
// directory, a mounted share) costs one bounded read, never a walk.
const (
	// MaxScan is how many entries of one root are looked at. A root with
	// more is read in directory order up to the cap, so which ones are
	// seen is arbitrary: name a narrower root.
	MaxScan = 512
	// MaxFound is how many repositories ScanRoots returns in all.
	MaxFound = 50
	// MaxRoots is how many roots are scanned (the config allows no more).
	MaxRoots = config.MaxProjectRoots
)

// Repo is a git repository found one level below a project root.
type Repo struct {
	Dir  string    // Root joined with the entry's name: no symlink in it below Root
	Root string    // the root as scanned, symlinks resolved
	Mod  time.Time // last change of its .git (a commit, a checkout, a fetch)
}

// ExpandRoot turns a project_roots entry into an absolute path: "~/src"
// is under home. It returns "" for anything else that is not absolute.
func ExpandRoot(root, home string) string {
	switch {
	case root == "~":
		return filepath.Clean(home)
	case strings.HasPrefix(root, "~/"):
		if home == "" {
			return ""
		}
		return filepath.Join(home, root[2:])
	case filepath.IsAbs(root):
		return filepath.Clean(root)
	}
	return ""
}

// ScanRoots lists the git repositories directly below each root (absolute
// paths, as ExpandRoot gives): subdirectories holding a .git directory or
// file (a worktree or submodule checkout), newest .git change first, at
// most MaxFound. Hidden entries are skipped.
//
// A root is the user's own config, so a root that is a symlink is
// resolved once. Nothing below a root is followed: an entry that is a
// symlink is skipped (a box whose project holds a root could otherwise
// point the menu at any folder), and .git is looked up through an os.Root
// of the entry, so a swapped-in symlink cannot lead the lookup out.
// Unreadable roots are skipped.
func ScanRoots(roots []string) []Repo {
	var out []Repo
	seen := map[string]bool{}
	for i, root := range roots {
		if i == MaxRoots {
			break
		}
		if !filepath.IsAbs(root) {
			continue
		}
		real, err := filepath.EvalSymlinks(root)
		if err != nil || seen[real] {
			continue
		}
		seen[real] = true
		out = append(out, scanRoot(real)...)
	}
	slices.SortStableFunc(out, func(a, b Repo) int {
		if c := b.Mod.Compare(a.Mod); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	out = slices.CompactFunc(out, func(a, b Repo) bool { return a.Dir == b.Dir })
	if len(out) > MaxFound {
		out = out[:MaxFound]
	}
	return out
}

func scanRoot(root string) []Repo {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil
	}
	defer r.Close()
	d, err := r.Open(".")
	if err != nil {
		return nil
	}
	ents, err := d.ReadDir(MaxScan)
	d.Close()
	if err != nil && !errors.Is(err, io.EOF) && len(ents) == 0 {
		return nil
	}
	var out []Repo
	for _, e := range ents {
		name := e.Name()
		// DirEntry's type is the entry's own (lstat): a symlink is never a
		// directory here.
		if strings.HasPrefix(name, ".") || !e.IsDir() {
			continue
		}
		sub, err := r.OpenRoot(name)
		if err != nil {
			continue
		}
		fi, err := sub.Lstat(".git")
		sub.Close()
		if err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
			continue
		}
		out = append(out, Repo{Dir: filepath.Join(root, name), Root: root, Mod: fi.ModTime()})
	}
	return out
}

// CheckDir reports whether dir is still a plain directory with no symlink
// in its path: the app checks a folder from the menu again just before it
// hands it to a terminal, as the folder may have been swapped since the
// scan.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &fs.PathError{Op: "open project", Path: dir, Err: errors.New("not a directory")}
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	if real != filepath.Clean(dir) {
		return &fs.PathError{Op: "open project", Path: dir, Err: errors.New("the path goes through a symlink (to " + real + ")")}
	}
	return nil
}
