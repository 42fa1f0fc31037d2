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
	"path/filepath"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// MaxEntries caps the recent list; Record drops the oldest beyond it.
const MaxEntries = 20

// maxFile caps recent.json: MaxEntries paths of up to PATH_MAX bytes, each
// escaped by JSON at worst six times over, fit.
const maxFile = 1 << 20

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
// entries that are not clean absolute paths are dropped. The file is read
// as a regular file only, without blocking (core/untrusted): a FIFO in its
// place cannot hang a command.
func Read(l paths.Layout) []Entry {
	b, err := untrusted.ReadJSON(l.RecentProjects(), untrusted.State(maxFile))
	if err != nil {
		return nil
	}
	return parse(b)
}

// parse decodes recent.json's content; bad content is an empty list.
func parse(b []byte) []Entry {
	var v file
	if untrusted.CheckJSON(b, untrusted.State(maxFile)) != nil || json.Unmarshal(b, &v) != nil {
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
// recent list. Writers in several processes (CLI sessions, the app) change
// the file with atomicfile.Update (a read-modify-write under the file's
// lock, replaced atomically), so no reader sees half a list and no writer
// loses another's entry. Content that does not decode is replaced (the
// list is only suggestions); a special file in its place is an error
// naming it, and is left alone.
func Record(l paths.Layout, dir string, now time.Time) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("recording recent project %q: not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	if list := Read(l); len(list) > 0 && list[0].Dir == dir && now.Sub(list[0].Used) < refreshAfter && !now.Before(list[0].Used) {
		return nil
	}
	// Update, not UpdateJSON: content refused by its shape is bad content,
	// replaced like any other (parse checks the shape first).
	err := atomicfile.Update(l.RecentProjects(), maxFile, func(old []byte) ([]byte, error) {
		list := slices.DeleteFunc(parse(old), func(e Entry) bool { return e.Dir == dir })
		list = clean(append([]Entry{{Dir: dir, Used: now}}, list...))
		b, err := json.MarshalIndent(file{Projects: list}, "", "  ")
		if err != nil {
			return nil, err
		}
		return append(b, '\n'), nil
	})
	var fe *untrusted.FileError
	if errors.As(err, &fe) {
		return hint.New(fmt.Errorf("recording recent project: %w", err), "corral writes "+l.RecentProjects()+" (the menu's recent projects); move it away or delete it")
	}
	if err != nil {
		return fmt.Errorf("recording recent project: %w", err)
	}
	return nil
}
