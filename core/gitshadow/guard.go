package gitshadow

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/untrusted"
)

// The guard (Guard) records, when a session starts, the state of the git
// directories a box could write, and puts it back at every corral command.
// Its invariants, which the tests and FuzzGuard check:
//
//   - It touches only what it recorded: every open, read, rename and write
//     goes through an os.Root of a recorded git directory (or, for the
//     project's ".git" entry alone, of the project), whose identity
//     (device and inode) must match the record. Nothing outside them is
//     watched, opened, moved or written, whatever a config includes.
//   - It never follows a symbolic link: a link the box planted is itself
//     the change, moved aside as a link.
//   - It opens regular files only, non-blocking and capped
//     (untrusted.ReadFileIn): a FIFO or a device is compared by its type.
//   - A config that now includes a path outside the git directories is a
//     modified config: the recorded copy is put back. The included path is
//     never looked at.
//   - What the box added is renamed into the git directory's
//     QuarantineDir, never deleted; the guard's own state (Guard.Dir) is
//     never under a git directory.

// Entry is one watched path's recorded state. Absent marks a watched name
// that did not exist (a config.worktree the box must not create).
type Entry struct {
	Absent bool        `json:"absent,omitempty"`
	Mode   fs.FileMode `json:"mode,omitempty"`
	SHA256 string      `json:"sha256,omitempty"`
	Link   string      `json:"link,omitempty"` // symlink target
	// Replace is a packed-refs file's digest of its refs/replace lines.
	Replace string `json:"replace,omitempty"`
	// Unread marks a regular file too large to read: it differs from
	// every recorded copy.
	Unread bool `json:"unread,omitempty"`
}

// FormatVersion is the version of fingerprint.json the guard writes.
// Version 0 (no "version" key) is the format before git_dirs and mode: see
// legacyRoots.
const FormatVersion = 2

// DirID names a directory the guard opened at Record, with its identity:
// a directory swapped for another (or a symlink) at the same path is not
// the recorded one, and the guard then touches nothing in it.
type DirID struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev,omitempty"`
	Ino  uint64 `json:"ino,omitempty"`
}

// Fingerprint is the state of a repository's git directories as recorded
// when a session started.
type Fingerprint struct {
	Version  int       `json:"version,omitempty"`
	Project  string    `json:"project"`
	Recorded time.Time `json:"recorded"`
	Mode     Mode      `json:"mode,omitempty"`
	// ProjectDir is the project (whose ".git" entry is watched), GitDirs
	// the recorded git directories (outermost of GitDir and CommonDir).
	ProjectDir *DirID  `json:"project_dir,omitempty"`
	GitDirs    []DirID `json:"git_dirs,omitempty"`
	// Files are the watched paths, absolute.
	Files map[string]Entry `json:"files"`
	// Dirs are version 0's watched directories (hooks, info).
	Dirs []string `json:"dirs,omitempty"`
	// Outside lists the include paths of the recorded configs that name
	// something outside the git directories, as written: never watched.
	Outside []string `json:"outside,omitempty"`
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

// Guard keeps the fingerprint of one box's repository in Dir (a private
// state directory: fingerprint.json and the recorded copies in blobs/).
type Guard struct {
	Dir string
	// Mode is what Record records for; "" means Frozen.
	Mode Mode
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

// Record fingerprints the git directories of project and keeps a copy of
// every watched file, replacing any earlier record.
func (g Guard) Record(project string, now time.Time) error {
	mode := g.Mode
	if mode == "" {
		mode = Frozen
	}
	if !mode.Valid() {
		return fmt.Errorf("git guard mode %q: want %q or %q", mode, Frozen, Commits)
	}
	d, err := Find(project)
	if err != nil {
		return err
	}
	fp := Fingerprint{Version: FormatVersion, Project: d.Project, Recorded: now.UTC(), Mode: mode}
	pid, err := dirID(d.Project)
	if err != nil {
		return err
	}
	fp.ProjectDir = &pid
	if d.IsRepo() {
		for _, p := range outermost([]string{d.GitDir, d.CommonDir}) {
			id, err := dirID(p)
			if err != nil {
				return err
			}
			fp.GitDirs = append(fp.GitDirs, id)
		}
	}
	if err := os.MkdirAll(filepath.Join(g.Dir, "blobs"), atomicfile.DirMode); err != nil {
		return err
	}
	files, outside, err := g.scan(fp, func(sum string, b []byte) error {
		if _, err := os.Stat(g.blob(sum)); err == nil {
			return nil
		}
		return atomicfile.WriteFile(g.blob(sum), b, atomicfile.FileMode)
	})
	if err != nil {
		return fmt.Errorf("fingerprinting the git directory of %s: %w", project, err)
	}
	fp.Files, fp.Outside = files, outside
	b, err := json.MarshalIndent(fp, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(g.fingerprintPath(), append(b, '\n'), atomicfile.FileMode)
}

// Load reads the recorded fingerprint; a version 0 one is migrated (see
// legacyRoots).
func (g Guard) Load() (Fingerprint, error) {
	var fp Fingerprint
	b, err := untrusted.ReadJSON(g.fingerprintPath(), untrusted.State(1<<30))
	if err != nil {
		return fp, err
	}
	if err := json.Unmarshal(b, &fp); err != nil {
		return fp, fmt.Errorf("reading %s: %w (corral stop the box, then start it again: a new record replaces it)", g.fingerprintPath(), err)
	}
	switch {
	case fp.Version == 0:
		legacyRoots(&fp)
	case fp.Version > FormatVersion:
		return fp, fmt.Errorf("reading %s: format version %d is newer than this corral's %d", g.fingerprintPath(), fp.Version, FormatVersion)
	case !fp.Mode.Valid():
		return fp, fmt.Errorf("reading %s: mode %q: want %q or %q", g.fingerprintPath(), fp.Mode, Frozen, Commits)
	}
	return fp, nil
}

// legacyRoots migrates a version 0 fingerprint: its git directories are
// the parents of its watched directories (hooks, info), and of its files
// only those inside them (and the project's .git file) are kept; the rest
// (included files anywhere) are forgotten, never touched. It is checked
// as it was recorded (config, hooks, info and the pointers, in Frozen
// mode): refs and the index were not recorded, so they are not compared.
func legacyRoots(fp *Fingerprint) {
	var roots []string
	for _, d := range fp.Dirs {
		roots = append(roots, filepath.Dir(filepath.Clean(d)))
	}
	for _, r := range outermost(roots) {
		fp.GitDirs = append(fp.GitDirs, DirID{Path: r})
	}
	dotGit := filepath.Join(fp.Project, ".git")
	for p := range fp.Files {
		if p != dotGit && !slices.ContainsFunc(fp.GitDirs, func(r DirID) bool { return within(r.Path, p) }) {
			delete(fp.Files, p)
		}
	}
	if _, ok := fp.Files[dotGit]; ok && fp.Project != "" {
		fp.ProjectDir = &DirID{Path: fp.Project}
	}
	fp.Mode = Frozen
}

// dirID reads the identity of the directory at p (not following a final
// symbolic link).
func dirID(p string) (DirID, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return DirID{}, err
	}
	if !fi.IsDir() {
		return DirID{}, fmt.Errorf("%s is not a directory", p)
	}
	id := DirID{Path: p}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.Dev, id.Ino = uint64(st.Dev), uint64(st.Ino) //nolint:unconvert // int32 on darwin
	}
	return id, nil
}

// openDir opens a recorded directory as a Root, refusing one that is not
// the recorded directory (swapped, or now a symlink).
func openDir(id DirID) (*os.Root, error) {
	if fi, err := os.Lstat(id.Path); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is no longer a directory (the guard does not follow it): put the repository back by hand", id.Path)
	}
	r, err := os.OpenRoot(id.Path)
	if err != nil {
		return nil, err
	}
	fi, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && id.Ino != 0 && (uint64(st.Dev) != id.Dev || uint64(st.Ino) != id.Ino) { //nolint:unconvert
		r.Close()
		return nil, fmt.Errorf("%s is not the directory recorded at session start (replaced or moved): the guard touches nothing there; put the repository back by hand", id.Path)
	}
	return r, nil
}

// scan reads the current state of what fp watches: the project's .git
// entry, every recorded path, and whatever the mode watches in each git
// directory. blob, if not nil, receives each regular file's content. On
// an error the entries read so far are returned with it.
func (g Guard) scan(fp Fingerprint, blob func(sum string, b []byte) error) (map[string]Entry, []string, error) {
	out := map[string]Entry{}
	count := 0
	var outside []string
	if fp.ProjectDir != nil {
		pr, err := openDir(*fp.ProjectDir)
		if err != nil {
			return nil, nil, err
		}
		s := scanner{root: pr, out: map[string]Entry{}, configs: map[string][]byte{}, maxFiles: g.limit(), count: &count, blob: blob}
		err = s.add(".git")
		pr.Close()
		if err != nil {
			return nil, nil, err
		}
		out[filepath.Join(fp.ProjectDir.Path, ".git")] = s.out[".git"]
	}
	var errs []error
	for _, id := range fp.GitDirs {
		r, err := openDir(id)
		if err != nil {
			return nil, nil, err
		}
		s := scanner{root: r, out: map[string]Entry{}, configs: map[string][]byte{}, maxFiles: g.limit(), count: &count, blob: blob}
		// The recorded paths first: a flood of new files cannot hide a
		// change to what was recorded.
		for _, p := range slices.Sorted(mapKeys(fp.Files)) {
			if rel, ok := relIn(id.Path, p); ok {
				if err = s.add(rel); err != nil {
					break
				}
			}
		}
		if err == nil {
			if fp.Version == 0 {
				for _, d := range fp.Dirs {
					if rel, ok := relIn(id.Path, d); ok {
						if err = s.walk(rel, func(string, bool) bool { return true }, false); err != nil {
							break
						}
					}
				}
			} else {
				err = s.walk(".", func(rel string, isDir bool) bool { return watchedIn(classify(rel, isDir), fp.Mode) }, false)
			}
		}
		if err == nil && blob != nil {
			// At Record only: a Check compares what was recorded (a
			// config the box changed is itself the change).
			var o []string
			o, err = s.followIncludes(id.Path)
			outside = append(outside, o...)
		}
		for rel, e := range s.out {
			out[filepath.Join(id.Path, filepath.FromSlash(rel))] = e
		}
		r.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id.Path, err))
			if blob != nil {
				break
			}
		}
	}
	return out, outside, errors.Join(errs...)
}

// relIn returns p relative to dir (slash-separated) when p is inside it.
func relIn(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// commitsPackedRefs reports whether p is a packed-refs file that mode
// compares by its refs/replace lines only.
func commitsPackedRefs(mode Mode, p string) bool {
	return mode == Commits && filepath.Base(p) == "packed-refs"
}

// replaceOf is the refs/replace digest of an entry; an absent file has
// none.
func replaceOf(e Entry) string {
	if e.Absent || e.Mode == 0 {
		return replaceDigest(nil)
	}
	if !e.Mode.IsRegular() || e.Unread {
		return "not a regular file"
	}
	return e.Replace
}

// Check compares the git directories with the fingerprint. The changes it
// returns are valid with an error too (a flood of files stops the scan
// after the recorded paths were compared): revert them.
func (g Guard) Check() ([]Change, error) {
	fp, err := g.Load()
	if err != nil {
		return nil, err
	}
	now, _, scanErr := g.scan(fp, nil)
	if now == nil {
		return nil, fmt.Errorf("checking the git directory of %s: %w", fp.Project, scanErr)
	}
	var out []Change
	for p, e := range now {
		old, ok := fp.Files[p]
		if commitsPackedRefs(fp.Mode, p) {
			// The box may pack its branches; not its replace refs.
			if replaceOf(old) != replaceOf(e) {
				out = append(out, Change{Path: p, Kind: Modified})
			}
			continue
		}
		switch {
		case (!ok || old.Absent) && !e.Absent:
			out = append(out, Change{Path: p, Kind: Added})
		case ok && !old.Absent && e.Absent:
			out = append(out, Change{Path: p, Kind: Removed})
		case ok && old != e:
			out = append(out, Change{Path: p, Kind: Modified})
		}
	}
	slices.SortFunc(out, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	if scanErr != nil {
		scanErr = fmt.Errorf("checking the git directory of %s: %w", fp.Project, scanErr)
	}
	return out, scanErr
}

// Revert puts back what Check found changed, inside the recorded
// directories only: modified and removed files get their recorded content
// and mode; what was added (or what stands where a recorded file was:
// a directory, a symlink, a FIFO) is renamed into the git directory's
// QuarantineDir, never opened or deleted. It returns what it could not
// revert.
func (g Guard) Revert(changes []Change, now time.Time) error {
	fp, err := g.Load()
	if err != nil {
		return err
	}
	stamp := now.UTC().Format("20060102T150405Z") + "-" + randHex()
	roots := map[string]*os.Root{}
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	var errs []error
	// Paths sort parents first: a directory is put back before its files.
	changes = slices.Clone(changes)
	slices.SortFunc(changes, func(a, b Change) int { return strings.Compare(a.Path, b.Path) })
	for _, c := range changes {
		id, rel, ok := locate(fp, c.Path)
		if !ok {
			errs = append(errs, fmt.Errorf("not touching %s: it is outside the recorded git directories", c.Path))
			continue
		}
		r := roots[id.Path]
		if r == nil {
			if r, err = openDir(id); err != nil {
				errs = append(errs, err)
				continue
			}
			roots[id.Path] = r
		}
		rv := reverter{root: r, dir: id.Path, stamp: stamp, blobs: g}
		if fp.ProjectDir != nil && id.Path == fp.ProjectDir.Path {
			rv.project = true
		}
		if commitsPackedRefs(fp.Mode, c.Path) && !rv.project {
			err = rv.revertReplaceRefs(rel, fp.Files[c.Path])
		} else {
			err = rv.revert(rel, fp.Files[c.Path])
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// locate finds the recorded directory p is in (the project for its .git
// entry only) and p relative to it.
func locate(fp Fingerprint, p string) (DirID, string, bool) {
	if fp.ProjectDir != nil && p == filepath.Join(fp.ProjectDir.Path, ".git") {
		return *fp.ProjectDir, ".git", true
	}
	best, bestRel, found := DirID{}, "", false
	for _, id := range fp.GitDirs {
		if rel, ok := relIn(id.Path, p); ok && (!found || len(id.Path) > len(best.Path)) {
			best, bestRel, found = id, rel, true
		}
	}
	return best, bestRel, found
}

func randHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// reverter puts one path back inside one Root.
type reverter struct {
	root    *os.Root
	dir     string
	project bool // root is the project: only its ".git" entry is touched
	stamp   string
	blobs   Guard
}

func (rv reverter) revert(rel string, old Entry) error {
	name := filepath.FromSlash(rel)
	abs := filepath.Join(rv.dir, name)
	if err := rv.realParents(rel); err != nil {
		return fmt.Errorf("not restoring %s: %w", abs, err)
	}
	cur, err := rv.root.Lstat(name)
	exists := err == nil
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restoring %s: %w", abs, err)
	}
	switch {
	case old.Absent || old.Mode == 0:
		if exists {
			return rv.aside(rel)
		}
		return nil
	case old.Mode.IsDir():
		if exists && cur.IsDir() {
			if cur.Mode() != old.Mode {
				return rv.root.Chmod(name, old.Mode.Perm())
			}
			return nil
		}
		if rv.project {
			// The git directory is gone (renamed by the box): the guard
			// cannot make it up. What stands there instead goes aside so
			// that host git does not use it.
			var err error
			if exists {
				err = rv.aside(rel)
			}
			return errors.Join(err, fmt.Errorf("%s was a directory and is gone: find it and put it back by hand", abs))
		}
		if exists {
			if err := rv.aside(rel); err != nil {
				return err
			}
		}
		if err := rv.root.Mkdir(name, old.Mode.Perm()); err != nil {
			return fmt.Errorf("restoring %s: %w", abs, err)
		}
		return rv.root.Chmod(name, old.Mode.Perm())
	case old.Link != "":
		if exists {
			if err := rv.aside(rel); err != nil {
				return err
			}
		}
		if err := rv.root.Symlink(old.Link, name); err != nil {
			return fmt.Errorf("restoring %s: %w", abs, err)
		}
		return nil
	case old.SHA256 != "":
		b, err := untrusted.ReadFile(rv.blobs.blob(old.SHA256), MaxWatchedSize)
		if err != nil {
			return fmt.Errorf("restoring %s: the recorded copy: %w", abs, err)
		}
		// Whatever is there instead (a directory, a symlink, a FIFO) goes
		// aside; a regular file is replaced by the rename below.
		if exists && !cur.Mode().IsRegular() {
			if err := rv.aside(rel); err != nil {
				return err
			}
		}
		if err := rv.mkdirs(path.Dir(rel)); err != nil {
			return fmt.Errorf("restoring %s: %w", abs, err)
		}
		if err := rv.write(name, b, old.Mode.Perm()); err != nil {
			return fmt.Errorf("restoring %s: %w", abs, err)
		}
		return nil
	}
	// A FIFO, device or socket that was recorded: nothing to restore from.
	if exists && cur.Mode() == old.Mode {
		return nil
	}
	return fmt.Errorf("cannot restore %s (a %v when recorded)", abs, old.Mode.Type())
}

// revertReplaceRefs puts back the refs/replace lines of a packed-refs
// file and keeps its other refs (Commits mode: the box may pack its
// branches, and restoring the whole file would lose them).
func (rv reverter) revertReplaceRefs(rel string, old Entry) error {
	name := filepath.FromSlash(rel)
	abs := filepath.Join(rv.dir, name)
	if err := rv.realParents(rel); err != nil {
		return fmt.Errorf("not restoring %s: %w", abs, err)
	}
	cur, err := untrusted.ReadFileIn(rv.root, name, MaxWatchedSize)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if replaceOf(old) == replaceDigest(nil) {
				return nil
			}
		} else if !errors.Is(err, untrusted.ErrNotRegular) && !errors.Is(err, untrusted.ErrTooLarge) {
			return fmt.Errorf("restoring %s: %w", abs, err)
		}
		// Not a regular file: the whole recorded state goes back.
		return rv.revert(rel, old)
	}
	var recorded []byte
	if !old.Absent && old.SHA256 != "" {
		if recorded, err = untrusted.ReadFile(rv.blobs.blob(old.SHA256), MaxWatchedSize); err != nil {
			return fmt.Errorf("restoring %s: the recorded copy: %w", abs, err)
		}
	}
	perm := fs.FileMode(0o644)
	if old.Mode.IsRegular() {
		perm = old.Mode.Perm()
	}
	return rv.write(name, withReplaceRefs(cur, recorded), perm)
}

// realParents refuses a path with a parent that is not a real directory:
// the Root keeps the path inside, but a symlinked parent would still put
// a restored file where the box chose.
func (rv reverter) realParents(rel string) error {
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		fi, err := rv.root.Lstat(filepath.FromSlash(d))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", filepath.Join(rv.dir, d))
		}
	}
	return nil
}

func (rv reverter) mkdirs(d string) error {
	if d == "." {
		return nil
	}
	return rv.root.MkdirAll(filepath.FromSlash(d), 0o755)
}

// write replaces name atomically: a fresh file beside it (a ".lock" name,
// which the guard never watches), then a rename over it.
func (rv reverter) write(name string, b []byte, perm fs.FileMode) error {
	tmp := name + ".corral-" + randHex() + ".lock"
	f, err := rv.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rv.root.Rename(tmp, name)
	}
	if err != nil {
		_ = rv.root.Remove(tmp)
	}
	return err
}

// aside renames rel (whatever it is: it is never opened) into the
// quarantine of its git directory; in the project, .git becomes
// .git.corral-quarantine-<stamp> beside it.
func (rv reverter) aside(rel string) error {
	var dst string
	if rv.project {
		dst = ".git." + QuarantineDir + "-" + rv.stamp
	} else {
		q := QuarantineDir
		if fi, err := rv.root.Lstat(q); err == nil && !fi.IsDir() {
			// Not the guard's: a link or file the box put there goes.
			if err := rv.root.Remove(q); err != nil {
				return fmt.Errorf("moving %s aside: %w", filepath.Join(rv.dir, q), err)
			}
		}
		if err := rv.root.Mkdir(q, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("moving %s aside: %w", filepath.Join(rv.dir, rel), err)
		}
		q = filepath.Join(q, rv.stamp)
		if err := rv.root.Mkdir(q, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("moving %s aside: %w", filepath.Join(rv.dir, rel), err)
		}
		dst = filepath.Join(q, "%"+strings.ReplaceAll(rel, "/", "%"))
	}
	if err := rv.root.Rename(filepath.FromSlash(rel), dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("moving %s aside: %w", filepath.Join(rv.dir, rel), err)
	}
	return nil
}

// Disarm forgets the fingerprint (the box can no longer write the project).
func (g Guard) Disarm() error {
	return os.RemoveAll(g.Dir)
}
