package egress

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/corral-dev/corral/core/jsonl"

	"github.com/corral-dev/corral/core/untrusted"
)

// ReadLog reads the decision log at path with its kept and rotated
// generations (see [jsonl.Generations]), oldest first, and returns the
// entries at or after since. Lines that do not parse are skipped, and a good
// line glued onto a torn one is recovered (see package jsonl). A missing log
// is empty.
func ReadLog(path string, since time.Time) ([]Entry, error) {
	var out []Entry
	err := jsonl.ReadAll(path, func(line []byte) error {
		var e Entry
		if json.Unmarshal(line, &e) != nil {
			return nil
		}
		if !e.Time.Before(since) {
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading egress log: %w", err)
	}
	return out, nil
}

// HostSummary aggregates the decisions for one destination.
type HostSummary struct {
	Host     string
	Port     int
	Allowed  bool
	Count    int
	LastSeen time.Time
	// Reason is the reason of the most recent decision.
	Reason Reason
}

// Summarize groups decision entries by host, port and outcome. Denied
// destinations come first, then the most frequent; ties by host and port.
// Session markers are ignored.
func Summarize(entries []Entry) []HostSummary {
	type key struct {
		host    string
		port    int
		allowed bool
	}
	idx := map[key]int{}
	var out []HostSummary
	for _, e := range entries {
		if !e.IsDecision() {
			continue
		}
		k := key{e.Host, e.Port, e.Allowed}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, HostSummary{Host: e.Host, Port: e.Port, Allowed: e.Allowed})
		}
		s := &out[i]
		if e.Allowed || e.HeldMS == 0 || s.Count == 0 {
			// A held request that ended denied was counted when its
			// hold began (unless that line is not among entries).
			s.Count += e.N()
		}
		if !e.Time.Before(s.LastSeen) {
			s.LastSeen, s.Reason = e.Time, e.Reason
		}
	}
	slices.SortFunc(out, func(a, b HostSummary) int {
		if a.Allowed != b.Allowed {
			if !a.Allowed {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	return out
}

// followPoll is the safety-net interval at which Follow checks the file even
// without a notification (lost events, file systems without inotify).
const followPoll = 2 * time.Second

// Follow calls fn for every entry appended to the log at path after Follow
// starts, until ctx is done. It reads only new bytes (never the whole file
// again), keeps a partial last line until it is complete, and follows
// rotation: when path is replaced it finishes the old file and starts the new
// one from its beginning. The log need not exist yet. It returns nil when ctx
// is cancelled.
func Follow(ctx context.Context, path string, fn func(Entry)) error {
	return follow(ctx, path, true, fn)
}

// FollowAll is Follow from the beginning of the log as it is now: for a
// log whose writer started before its follower did, such as the log of a
// box created while the app ran.
func FollowAll(ctx context.Context, path string, fn func(Entry)) error {
	return follow(ctx, path, false, fn)
}

// followWatch decides how Follow learns that a log grew on goos: through a
// watch of the log's directory where one directory watch costs one
// descriptor (inotify), or by polling alone. kqueue (macOS, the BSDs)
// opens a descriptor for every file in a watched directory: the logs
// directory holds every box's logs and their rotated copies, so a watch
// per followed log would be logs × files descriptors. Polling one open
// file's size every followPollOnly costs a stat. (The app follows every
// box's log with LogTail on one ticker of its own instead.)
func followWatch(goos string) (watchDir bool, poll time.Duration) {
	if goos == "linux" {
		return true, followPoll
	}
	return false, followPollOnly
}

// followPollOnly is Follow's interval where it has no directory watch: a
// denial reaches the app's notification within about half a second.
const followPollOnly = 500 * time.Millisecond

func follow(ctx context.Context, path string, atEnd bool, fn func(Entry)) error {
	watchDir, every := followWatch(runtime.GOOS)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if watchDir {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			return fmt.Errorf("following egress log %s: %w", path, err)
		}
		defer w.Close()
		dir := filepath.Dir(path)
		if err := w.Add(dir); err != nil {
			return fmt.Errorf("following egress log %s: watching %s: %w", path, dir, err)
		}
		events, errs = w.Events, w.Errors
	}
	t := &tail{path: path, fn: fn}
	defer t.close()
	t.reopen(atEnd)
	if !atEnd && t.f != nil {
		t.drain()
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if filepath.Clean(ev.Name) == filepath.Clean(path) {
				t.poll()
			}
		case err, ok := <-errs:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				t.poll()
			}
		case <-tick.C:
			t.poll()
		}
	}
}

type tail struct {
	path    string
	fn      func(Entry)
	f       *os.File
	partial []byte
	buf     []byte
}

// reopen opens path; atEnd skips what is already there (the first open).
func (t *tail) reopen(atEnd bool) {
	f, err := untrusted.Open(t.path) // a FIFO in its place must not block the follower
	if err != nil {
		return
	}
	if atEnd {
		if _, err := f.Seek(0, io.SeekEnd); err != nil {
			f.Close()
			return
		}
	}
	t.f, t.partial = f, t.partial[:0]
}

func (t *tail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

func (t *tail) poll() {
	if t.f == nil {
		t.reopen(false)
		if t.f == nil {
			return
		}
	}
	t.drain()
	cur, err1 := t.f.Stat()
	onDisk, err2 := os.Stat(t.path)
	switch {
	case err2 != nil: // rotated away and not recreated yet
	case err1 != nil || !os.SameFile(cur, onDisk):
		t.drain() // lines written to the old file before it was renamed
		t.close()
		t.reopen(false)
		if t.f != nil {
			t.drain()
		}
	default:
		if off, err := t.f.Seek(0, io.SeekCurrent); err == nil && onDisk.Size() < off {
			t.f.Seek(0, io.SeekStart) //nolint:errcheck // truncated in place
			t.partial = t.partial[:0]
			t.drain()
		}
	}
}

// drain reads from the current offset to EOF and emits complete lines.
func (t *tail) drain() {
	if t.buf == nil {
		t.buf = make([]byte, 32<<10)
	}
	for {
		n, err := t.f.Read(t.buf)
		data := t.buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				if len(t.partial) < 1<<20 {
					t.partial = append(t.partial, data...)
				}
				break
			}
			line := data[:i]
			if len(t.partial) > 0 {
				line = append(t.partial, line...)
				t.partial = t.partial[:0]
			}
			var e Entry
			if json.Unmarshal(line, &e) == nil {
				t.fn(e)
			}
			data = data[i+1:]
		}
		if err != nil || n == 0 {
			return
		}
	}
}
