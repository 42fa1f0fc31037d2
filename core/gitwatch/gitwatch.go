// Package gitwatch reports, within moments, a .git entry (any name git or
// a file system takes for .git, core/dotgit) or a HEAD file appearing
// anywhere in a work tree: the event-driven guard for boxes whose host
// cannot refuse them (macOS vz, where the project is shared by Apple's
// virtiofs with no hook in the file server, and git_shadow = false; on
// Linux qemu the name rule refuses them, core/namerule). An editor's git
// integration scans an open folder's subfolders and runs git status in each
// repository it finds, so a report at the next stop is too late.
//
// It reports and never moves: the watcher cannot tell the box's
// repository from one the user made in the same tree at the same moment
// (the tree is shared live), and moving the user's would lose their work.
//
// Watches are inotify's on Linux and kqueue's on macOS (both through
// fsnotify): one per directory, added as directories appear; a directory
// that appears is also scanned, so what was made in it before its watch
// existed is seen; a lost event (queue overflow) rescans the tree.
package gitwatch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/corral-dev/corral/core/dotgit"
	"github.com/fsnotify/fsnotify"
)

// MaxDirs caps the directories watched (each is an inotify watch or a
// kqueue descriptor); past it the rest of the tree is not watched and the
// watcher says so once.
const MaxDirs = 32768

// Found is one entry git would take for a repository's.
type Found struct {
	Path string
	Kind string // "directory", "file", "symlink" or "other"
}

// Options configure a Watch.
type Options struct {
	Root string
	// Found is called once per entry (by path), from the watcher's
	// goroutine, for every .git or HEAD entry that was not there when
	// Watch started.
	Found  func(Found)
	Logger *slog.Logger
}

// Is reports whether name makes an entry one the watcher reports.
func Is(name string) bool { return dotgit.Is(name) || name == "HEAD" }

type watcher struct {
	o        Options
	w        *fsnotify.Watcher
	mu       sync.Mutex
	dirs     map[string]bool
	seen     map[string]bool
	capped   bool
	baseline bool
}

// Watch watches o.Root until ctx ends. The entries there at the start are
// the baseline (the project's own .git, submodules, the user's nested
// repositories): they are not reported.
func Watch(ctx context.Context, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", o.Root, err)
	}
	defer fw.Close()
	w := &watcher{o: o, w: fw, dirs: map[string]bool{}, seen: map[string]bool{}, baseline: true}
	w.scan(o.Root)
	w.baseline = false
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fw.Events:
			if !ok {
				return nil
			}
			if ev.Has(fsnotify.Create) {
				w.entry(ev.Name)
			}
			if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
				w.forget(ev.Name)
			}
		case err, ok := <-fw.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				o.Logger.Warn("git watch: events lost, rescanning", "root", o.Root)
				w.scan(o.Root)
				continue
			}
			o.Logger.Warn("git watch", "root", o.Root, "err", err)
		}
	}
}

// entry looks at a path an event named: reported if it is a .git or HEAD
// entry; watched and scanned if it is a directory.
func (w *watcher) entry(p string) {
	fi, err := os.Lstat(p)
	if err != nil {
		return
	}
	if Is(filepath.Base(p)) {
		w.report(p, fi)
		return
	}
	if fi.IsDir() {
		w.scan(p)
	}
}

// scan watches every directory under dir (no link followed, nothing under
// a .git entered) and reports the .git and HEAD entries in it.
func (w *watcher) scan(dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if p != w.o.Root && Is(d.Name()) {
			if fi, err := os.Lstat(p); err == nil {
				w.report(p, fi)
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			w.add(p)
		}
		return nil
	})
}

func (w *watcher) add(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dirs[dir] {
		return
	}
	if len(w.dirs) >= MaxDirs {
		if !w.capped {
			w.capped = true
			w.o.Logger.Warn("git watch: too many directories, the rest are not watched", "root", w.o.Root, "max", MaxDirs)
		}
		return
	}
	if err := w.w.Add(dir); err != nil {
		return
	}
	w.dirs[dir] = true
}

func (w *watcher) forget(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.dirs, p)
	delete(w.seen, p)
}

func (w *watcher) report(p string, fi fs.FileInfo) {
	w.mu.Lock()
	if w.seen[p] {
		w.mu.Unlock()
		return
	}
	w.seen[p] = true
	baseline := w.baseline
	w.mu.Unlock()
	if baseline || w.o.Found == nil {
		return
	}
	kind := "other"
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		kind = "symlink"
	case fi.IsDir():
		kind = "directory"
	case fi.Mode().IsRegular():
		kind = "file"
	}
	w.o.Found(Found{Path: p, Kind: kind})
}
