package egress

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// reloadDebounce groups the several events of one save (write, chmod,
// rename) into one reload; reloadMaxDelay bounds the wait when events keep
// coming, so a reload still happens within about a second.
const (
	reloadDebounce = 100 * time.Millisecond
	reloadMaxDelay = 700 * time.Millisecond
)

// WatchFiles reloads the policy whenever one of paths changes, until ctx is
// done. It watches the parent directories rather than the files, so editors
// and tools that save by writing a temporary file and renaming it over the
// original are seen, and a file that does not exist yet can appear later.
// After a change settles (reloadDebounce, at most reloadMaxDelay) it calls load; on success it calls
// apply with the new policy, on error it logs and keeps the old one. Once
// its watches are in place it loads once more, so that a change made
// between the caller's first load and the watches is not lost. It
// returns nil when ctx is cancelled.
func WatchFiles(ctx context.Context, paths []string, load func() (*Policy, error), apply func(*Policy), logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching policy files: %w", err)
	}
	defer w.Close()
	want := map[string]bool{}
	dirs := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return fmt.Errorf("watching policy file %s: %w", p, err)
		}
		want[abs] = true
		dirs[filepath.Dir(abs)] = true
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			return fmt.Errorf("watching policy directory %s: %w", d, err)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var pendingSince time.Time // zero: no reload pending
	schedule := func() {
		now := time.Now()
		if pendingSince.IsZero() {
			pendingSince = now
		}
		timer.Reset(min(reloadDebounce, max(0, pendingSince.Add(reloadMaxDelay).Sub(now))))
	}
	// The caller loaded before these watches existed: anything written in
	// between raised no event.
	schedule()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if want[filepath.Clean(ev.Name)] {
				schedule()
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			logger.Warn("watching policy files", "err", err)
			schedule() // events may have been lost
		case <-timer.C:
			pendingSince = time.Time{}
			p, err := load()
			if err != nil {
				logger.Error("reloading egress policy; keeping the previous one", "err", err)
				continue
			}
			apply(p)
			logger.Info("egress policy reloaded", "policy", p.String())
		}
	}
}
