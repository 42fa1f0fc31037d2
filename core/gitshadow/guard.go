package gitshadow

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
)

// Limits of what the guard reads: a repository the box could write is
// hostile, so a flood of files or a huge file is refused, not read.
const (
	MaxWatchedFiles = 4096
	MaxWatchedSize  = 4 << 20
	maxIncludeDepth = 10
)

// Entry is one watched file's recorded state. Absent marks a watched name
// that did not exist (a config.worktree the box must not create).
type Entry struct {
	Absent bool        `json:"absent,omitempty"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	SHA256 string      `json:"sha256,omitempty"`
	Link   string      `json:"link,omitempty"` // symlink target
}

// Fingerprint is what git would execute from a repository, as recorded
// when a session started.
type Fingerprint struct {
	Project  string           `json:"project"`
	Recorded time.Time        `json:"recorded"`
	Files    map[string]Entry `json:"files"`
	// Dirs are the watched directories: a file that appears in one is a
	// change (a new hook).
	Dirs []string `json:"dirs"`
}

// ChangeKind says how a watched file changed.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Modified ChangeKind = "modified"
	Removed  ChangeKind = "removed"
)

// Change is one difference from the fingerprint.
type Change struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

func (c Change) String() string { return string(c.Kind) + " " + c.Path }

// watchedDirs are the directories under a git directory whose every file
// git may run or obey: hooks, and info (attributes, exclude, sparse
// checkout).
var watchedDirs = []string{"hooks", "info"}

// watchedFiles are single files under a git directory that decide what git
// runs: config (core.fsmonitor, core.hooksPath, filters, aliases, …), the
// per-worktree config, and the pointers that send git elsewhere.
var watchedFiles = []string{"config", "config.worktree", "commondir", "gitdir"}

// watchSet lists the files and directories the guard watches for d: the
// .git file itself, each git directory's watched files and directories, the
// same for every submodule (modules/**) and linked worktree (worktrees/*),
// and every file a config includes (include.path, includeIf.*.path).
func watchSet(d Dirs) (files, dirs []string, err error) {
	if !d.IsRepo() {
		return nil, nil, nil
	}
	if d.DotGitIsFile {
		files = append(files, d.DotGit)
	}
	var gitDirs []string
	for _, g := range outermostKeepAll([]string{d.GitDir, d.CommonDir}) {
		gitDirs = append(gitDirs, g)
		for _, sub := range []string{"modules", "worktrees"} {
			_ = filepath.WalkDir(filepath.Join(g, sub), func(p string, e fs.DirEntry, err error) error {
				if err != nil {
					return nil
				}
				if e.IsDir() && p != filepath.Join(g, sub) {
					// A module or worktree git directory holds HEAD or config.
					if isFile(filepath.Join(p, "HEAD")) || isFile(filepath.Join(p, "config")) || isFile(filepath.Join(p, "gitdir")) {
						gitDirs = append(gitDirs, p)
					}
					if e.Name() == "objects" || e.Name() == "refs" || e.Name() == "logs" {
						return filepath.SkipDir
					}
				}
				return nil
			})
		}
	}
	for _, g := range gitDirs {
		for _, f := range watchedFiles {
			files = append(files, filepath.Join(g, f))
		}
		for _, w := range watchedDirs {
			dirs = append(dirs, filepath.Join(g, w))
		}
	}
	// Included config files, transitively.
	seen := map[string]bool{}
	queue := []string{}
	for _, f := range files {
		if filepath.Base(f) == "config" || filepath.Base(f) == "config.worktree" {
			queue = append(queue, f)
		}
	}
	for depth := 0; depth < maxIncludeDepth && len(queue) > 0; depth++ {
		var next []string
		for _, cfg := range queue {
			if seen[cfg] {
				continue
			}
			seen[cfg] = true
			for _, inc := range includes(cfg) {
				if !slices.Contains(files, inc) {
					files = append(files, inc)
				}
				next = append(next, inc)
			}
		}
		queue = next
	}
	slices.Sort(files)
	slices.Sort(dirs)
	return slices.Compact(files), slices.Compact(dirs), nil
}

// outermostKeepAll dedups without dropping nested paths (a worktree's git
// directory lies inside the common one, and both have a config).
func outermostKeepAll(ps []string) []string {
	var out []string
	for _, p := range ps {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func isFile(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.Mode().IsRegular()
}

// includes returns the files a git config file includes (include.path and
// includeIf.<cond>.path, whatever the condition: the guard watches what
// git might read). Relative paths are relative to the config's directory;
// "~/" is the user's home.
func includes(cfg string) []string {
	b, err := readCapped(cfg)
	if err != nil {
		return nil
	}
	var out []string
	inInclude := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), MaxWatchedSize)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.Index(line, "]")
			if end < 0 {
				inInclude = false
				continue
			}
			sec := strings.ToLower(strings.TrimSpace(line[1:end]))
			name, _, _ := strings.Cut(sec, " ")
			name, _, _ = strings.Cut(name, ".")
			inInclude = name == "include" || name == "includeif"
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if !inInclude {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch {
		case v == "":
			continue
		case strings.HasPrefix(v, "~/"):
			home, err := os.UserHomeDir()
			if err != nil {
				continue
			}
			v = filepath.Join(home, v[2:])
		case !filepath.IsAbs(v):
			v = filepath.Join(filepath.Dir(cfg), v)
		}
		out = append(out, filepath.Clean(v))
	}
	return out
}

// readCapped reads a regular file of at most MaxWatchedSize bytes.
func readCapped(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxWatchedSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxWatchedSize {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, MaxWatchedSize)
	}
	return b, nil
}

// scan reads the current state of the watched files and of every file in
// the watched directories. blob, if not nil, receives each file's content.
func scan(files, dirs []string, limit int, blob func(sum string, b []byte) error) (map[string]Entry, error) {
	out := map[string]Entry{}
	add := func(p string) error {
		if len(out) >= limit {
			return fmt.Errorf("more than %d files to watch", limit)
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			out[p] = Entry{Absent: true}
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[p] = Entry{Mode: fi.Mode(), Link: t}
		case fi.Mode().IsRegular():
			b, err := readCapped(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			e := Entry{Mode: fi.Mode(), SHA256: hex.EncodeToString(sum[:])}
			if blob != nil {
				if err := blob(e.SHA256, b); err != nil {
					return err
				}
			}
			out[p] = e
		default:
			out[p] = Entry{Mode: fi.Mode()}
		}
		return nil
	}
	for _, f := range files {
		if err := add(f); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs {
		// The directory itself too: replacing hooks/ by a symlink is a change.
		if err := add(d); err != nil {
			return nil, err
		}
		if !out[d].Mode.IsDir() {
			continue
		}
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) && p == d {
				return nil
			}
			if err != nil {
				return err
			}
			if p == d {
				return nil
			}
			return add(p)
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Guard keeps the fingerprint of one box's repository in Dir (a private
// state directory: fingerprint.json and the recorded copies in blobs/).
type Guard struct {
	Dir string
	// MaxFiles caps the files watched; 0 means MaxWatchedFiles.
	MaxFiles int
}

func (g Guard) limit() int {
	if g.MaxFiles > 0 {
		return g.MaxFiles
	}
	return MaxWatchedFiles
}

func (g Guard) fingerprintPath() string { return filepath.Join(g.Dir, "fingerprint.json") }
func (g Guard) blob(sum string) string  { return filepath.Join(g.Dir, "blobs", sum) }

// Armed reports whether a fingerprint is recorded.
func (g Guard) Armed() bool {
	_, err := os.Stat(g.fingerprintPath())
	return err == nil
}

// Record fingerprints the repository of project and keeps a copy of every
// watched file, replacing any earlier record.
func (g Guard) Record(project string, now time.Time) error {
	d, err := Find(project)
	if err != nil {
		return err
	}
	files, dirs, err := watchSet(d)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(g.Dir, "blobs"), atomicfile.DirMode); err != nil {
		return err
	}
	entries, err := scan(files, dirs, g.limit(), func(sum string, b []byte) error {
		if _, err := os.Stat(g.blob(sum)); err == nil {
			return nil
		}
		return atomicfile.WriteFile(g.blob(sum), b, atomicfile.FileMode)
	})
	if err != nil {
		return fmt.Errorf("fingerprinting the git directory of %s: %w", project, err)
	}
	fp := Fingerprint{Project: d.Project, Recorded: now.UTC(), Files: entries, Dirs: dirs}
	b, err := json.MarshalIndent(fp, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(g.fingerprintPath(), append(b, '\n'), atomicfile.FileMode)
}

func (g Guard) load() (Fingerprint, error) {
	var fp Fingerprint
	b, err := os.ReadFile(g.fingerprintPath())
	if err != nil {
		return fp, err
	}
	if err := json.Unmarshal(b, &fp); err != nil {
		return fp, fmt.Errorf("reading %s: %w", g.fingerprintPath(), err)
	}
	return fp, nil
}

// Check compares the repository with the fingerprint. The watch set is the
// recorded one plus what the current state adds (a new include, a new
// submodule), so a change cannot hide by moving what is watched.
func (g Guard) Check() ([]Change, error) {
	fp, err := g.load()
	if err != nil {
		return nil, err
	}
	var files []string
	for p := range fp.Files {
		files = append(files, p)
	}
	dirs := fp.Dirs
	if d, err := Find(fp.Project); err == nil {
		f2, d2, _ := watchSet(d)
		files, dirs = append(files, f2...), append(dirs, d2...)
	}
	slices.Sort(files)
	slices.Sort(dirs)
	now, err := scan(slices.Compact(files), slices.Compact(dirs), g.limit(), nil)
	if err != nil {
		return nil, fmt.Errorf("checking the git directory of %s: %w", fp.Project, err)
	}
	var out []Change
	for p, e := range now {
		old, ok := fp.Files[p]
		switch {
		case (!ok || old.Absent) && !e.Absent:
			out = append(out, Change{Path: p, Kind: Added})
		case ok && !old.Absent && e.Absent:
			out = append(out, Change{Path: p, Kind: Removed})
		case ok && old != e:
			out = append(out, Change{Path: p, Kind: Modified})
		}
	}
	for p, old := range fp.Files {
		if _, ok := now[p]; !ok && !old.Absent {
			out = append(out, Change{Path: p, Kind: Removed})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// Revert puts back what Check found changed: modified and removed files
// get their recorded content and mode; added files are moved into the
// guard's quarantine directory (never deleted: the user may want to see
// them). It returns the changes it could not revert.
func (g Guard) Revert(changes []Change, now time.Time) error {
	fp, err := g.load()
	if err != nil {
		return err
	}
	q := filepath.Join(g.Dir, "quarantine", now.UTC().Format("20060102T150405Z"))
	var errs []error
	aside := func(p string) error {
		dst := filepath.Join(q, strings.ReplaceAll(strings.TrimPrefix(p, string(filepath.Separator)), string(filepath.Separator), "%"))
		if err := os.MkdirAll(q, atomicfile.DirMode); err != nil {
			return err
		}
		if err := os.Rename(p, dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("moving %s aside: %w", p, err)
		}
		return nil
	}
	// Paths sort parents first: a directory is put back before its files.
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	for _, c := range changes {
		old := fp.Files[c.Path]
		// Never write through a symlink the box may have planted in a
		// parent: the restored file would land wherever it points.
		if real, err := filepath.EvalSymlinks(filepath.Dir(c.Path)); err == nil && real != filepath.Dir(c.Path) {
			errs = append(errs, fmt.Errorf("not restoring %s: %s is a symbolic link", c.Path, filepath.Dir(c.Path)))
			continue
		}
		switch {
		case old.Mode.IsDir():
			if fi, err := os.Lstat(c.Path); err == nil && fi.IsDir() {
				continue
			}
			if err := aside(c.Path); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.Mkdir(c.Path, old.Mode.Perm()); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", c.Path, err))
			}
		case c.Kind == Added || old.Absent:
			if err := aside(c.Path); err != nil {
				errs = append(errs, err)
			}
			continue
		case old.Link != "":
			if err := aside(c.Path); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := os.Symlink(old.Link, c.Path); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", c.Path, err))
			}
		case old.SHA256 != "":
			b, err := os.ReadFile(g.blob(old.SHA256))
			if err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", c.Path, err))
				continue
			}
			// Whatever is there instead (a directory, a symlink) goes aside.
			if fi, err := os.Lstat(c.Path); err == nil && !fi.Mode().IsRegular() {
				if err := aside(c.Path); err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := os.MkdirAll(filepath.Dir(c.Path), 0o755); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := atomicfile.WriteFile(c.Path, b, old.Mode.Perm()); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s: %w", c.Path, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Disarm forgets the fingerprint (the box can no longer write the project).
func (g Guard) Disarm() error {
	return os.RemoveAll(g.Dir)
}
