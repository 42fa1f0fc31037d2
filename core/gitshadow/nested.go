package gitshadow

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Nested is a git repository inside the project's work tree other than
// the project's own: a ".git" directory or "gitdir:" file the box may have
// made. Host git run inside it uses its config and hooks, which the box
// wrote: core.fsmonitor runs on `git status`.
type Nested struct {
	// Dir is the repository's work tree, absolute; Rel the same relative
	// to the project (slash-separated).
	Dir string
	Rel string
	// GitFile says .git is a "gitdir:" file, not a directory.
	GitFile bool
}

// NestedLimits bound FindNested: the project is box-written, so a deep or
// huge tree must not stall a corral command.
type NestedLimits struct {
	MaxEntries int           // entries visited; 0 = 200000
	MaxDepth   int           // directory depth; 0 = 32
	Timeout    time.Duration // 0 = 3s
}

// NestedResult is what FindNested found, and whether it stopped early.
type NestedResult struct {
	Repos []Nested
	// Truncated says a limit was reached: there may be more.
	Truncated bool
}

// FindNested looks for git repositories inside d's work tree other than
// the top-level one, at any depth within the limits, without following
// symbolic links or entering any .git. Paths that are gitlinks
// (submodules) in the host's index are not reported: submodules are the
// user's. It reads the index itself (capped) and runs no git.
func FindNested(ctx context.Context, d Dirs, lim NestedLimits) (NestedResult, error) {
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = 200000
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = 32
	}
	if lim.Timeout <= 0 {
		lim.Timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	var res NestedResult
	links := map[string]bool{}
	if d.IsRepo() {
		var err error
		if links, err = indexGitlinkSet(filepath.Join(d.GitDir, "index")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
	}
	root, err := os.OpenRoot(d.Project)
	if err != nil {
		return res, err
	}
	defer root.Close()
	visits := 0
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := fs.ReadDir(root.FS(), dir)
		if err != nil {
			return nil // unreadable: skipped, like git
		}
		for _, de := range ents {
			if visits++; visits > lim.MaxEntries || ctx.Err() != nil {
				res.Truncated = true
				return errStop
			}
			rel := path.Join(dir, de.Name())
			if de.Name() == ".git" {
				if dir == "." {
					continue // the project's own
				}
				t := de.Type()
				if (t.IsDir() || t.IsRegular()) && !links[dir] {
					res.Repos = append(res.Repos, Nested{Dir: filepath.Join(d.Project, filepath.FromSlash(dir)), Rel: dir, GitFile: t.IsRegular()})
				}
				continue
			}
			if !de.IsDir() { // a symlink is not a directory here: never followed
				continue
			}
			if depth+1 > lim.MaxDepth {
				res.Truncated = true
				continue
			}
			if err := walk(rel, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(".", 0); err != nil && !errors.Is(err, errStop) {
		return res, err
	}
	slices.SortFunc(res.Repos, func(a, b Nested) int { return strings.Compare(a.Rel, b.Rel) })
	return res, nil
}

var errStop = errors.New("stop")

// indexGitlinkSet is IndexGitlinks as a set.
func indexGitlinkSet(p string) (map[string]bool, error) {
	links, err := IndexGitlinks(p)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bool, len(links))
	for _, l := range links {
		out[l] = true
	}
	return out, nil
}
