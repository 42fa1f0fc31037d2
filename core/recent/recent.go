// Package recent knows the project folders the menu offers besides the
// projects that have a box: the folders corral used lately (Record, Read: a
// small capped list in ~/.corral/recent.json that core/box writes at each
// Up) and the git repositories one level below the project_roots of the
// host config (ScanRoots).
//
// Folder names are hostile (a repository clone or a box's project can name
// a directory anything): nothing here displays them, callers pass them
// through core/display, and ScanRoots never follows a symlink.
package recent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/paths"
)

// MaxEntries caps the recent list; Record drops the oldest beyond it.
const MaxEntries = 20

// maxFile caps what Read reads of recent.json.
const maxFile = 64 << 10

// refreshAfter: Record does not rewrite the file when dir is already the
// newest entry and was recorded less than this long ago, so a run of
// sessions in one project costs one write.
const refreshAfter = 10 * time.Minute

// Entry is one recently used project folder.
type Entry struct {
	Dir  string    `json:"dir"` // absolute, symlink-free (as core/project resolved it)
	Used time.Time `json:"used"`
}

type file struct {
	Projects []Entry `json:"projects"`
}

// Read returns the recent list, newest first. A missing, oversized or
// unreadable file is an empty list (the menu only loses suggestions);
// entries that are not clean absolute paths are dropped.
func Read(l paths.Layout) []Entry {
	f, err := os.Open(l.RecentProjects())
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil || len(b) > maxFile {
		return nil
	}
	var v file
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return clean(v.Projects)
}

// clean drops bad and repeated entries, sorts newest first and caps.
func clean(in []Entry) []Entry {
	out := make([]Entry, 0, min(len(in), MaxEntries))
	seen := map[string]bool{}
	for _, e := range in {
		if e.Dir == "" || !filepath.IsAbs(e.Dir) || filepath.Clean(e.Dir) != e.Dir || seen[e.Dir] {
			continue
		}
		seen[e.Dir] = true
		out = append(out, e)
	}
	slices.SortStableFunc(out, func(a, b Entry) int { return b.Used.Compare(a.Used) })
	if len(out) > MaxEntries {
		out = out[:MaxEntries]
	}
	return out
}

// Record puts dir (an absolute, resolved project directory) first in the
// recent list. Writers in several processes (CLI sessions, the app) take
// run/recent.lock around the read-modify-write, and the file is replaced
// atomically, so no reader sees half a list and no writer loses another's
// entry.
func Record(l paths.Layout, dir string, now time.Time) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("recording recent project %q: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	if list := Read(l); len(list) > 0 && list[0].Dir == dir && now.Sub(list[0].Used) < refreshAfter && !now.Before(list[0].Used) {
		return nil
	}
	unlock, err := lock(l.Lock("recent"))
	if err != nil {
		return fmt.Errorf("recording recent project: %w", err)
	}
	defer unlock()
	list := slices.DeleteFunc(Read(l), func(e Entry) bool { return e.Dir == dir })
	list = clean(append([]Entry{{Dir: dir, Used: now}}, list...))
	b, err := json.MarshalIndent(file{Projects: list}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(l.RecentProjects(), append(b, '\n'), atomicfile.FileMode)
}

// lock takes an exclusive flock on path, waiting for it.
func lock(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), atomicfile.DirMode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, atomicfile.FileMode)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
