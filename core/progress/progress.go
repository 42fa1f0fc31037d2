// Package progress shows a long step while it runs: its name, what it is
// doing now and the time since it began. On a terminal that is one line,
// rewritten every second; elsewhere (a log, CI) a plain line when the step
// has run Quiet and again at each change of what it is doing, never more
// than one a second. A step that ends within Quiet prints nothing, so quick
// commands stay as they were. It also follows Lima's host agent log for
// what a booting VM is doing (Follow).
package progress

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// Quiet is how long a step runs before it is shown.
const Quiet = 2 * time.Second

// Writer shows steps on W.
type Writer struct {
	W   io.Writer
	TTY bool
	// Tick is how often a terminal line is rewritten (default 1 s); tests
	// shorten it.
	Tick time.Duration
	now  func() time.Time
}

// Step is one running step.
type Step struct {
	w      *Writer
	name   string
	start  time.Time
	mu     sync.Mutex
	detail string
	shown  bool   // anything printed yet
	last   string // the last plain line's detail
	done   chan struct{}
	wg     sync.WaitGroup
}

// Start begins a step. A nil Writer or one without W gives a step that
// prints nothing.
func (w *Writer) Start(name string) *Step {
	s := &Step{w: w, name: name, done: make(chan struct{})}
	if w == nil || w.W == nil {
		return s
	}
	if w.now == nil {
		w.now = time.Now
	}
	s.start = w.now()
	tick := w.Tick
	if tick <= 0 {
		tick = time.Second
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				s.show(false)
			}
		}
	}()
	return s
}

// Set says what the step is doing now (untrusted text is escaped).
func (s *Step) Set(detail string) {
	if s == nil || s.w == nil || s.w.W == nil {
		return
	}
	s.mu.Lock()
	s.detail = display.Text(detail, 80)
	s.mu.Unlock()
	s.show(false)
}

// End ends the step: on a terminal its line is finished with the time it
// took (or the failure); elsewhere a last line says so, when the step was
// shown at all.
func (s *Step) End(err error) {
	if s == nil || s.w == nil || s.w.W == nil {
		return
	}
	close(s.done)
	s.wg.Wait()
	s.show(true, err)
}

func (s *Step) show(end bool, errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	elapsed := s.w.now().Sub(s.start)
	if !s.shown && elapsed < Quiet {
		return
	}
	secs := fmt.Sprintf("%d s", int(elapsed.Round(time.Second)/time.Second))
	if end {
		outcome := "done in " + secs
		if len(errs) > 0 && errs[0] != nil {
			outcome = "failed after " + secs
		}
		if s.w.TTY {
			fmt.Fprintf(s.w.W, "\r\033[K%s: %s\n", s.name, outcome)
		} else {
			fmt.Fprintf(s.w.W, "%s: %s\n", s.name, outcome)
		}
		return
	}
	line := s.name
	if s.detail != "" {
		line += ": " + s.detail
	}
	if s.w.TTY {
		fmt.Fprintf(s.w.W, "\r\033[K%s · %s", line, secs)
		s.shown = true
		return
	}
	if !s.shown || s.detail != s.last {
		fmt.Fprintf(s.w.W, "%s (%s)\n", line, secs)
		s.shown, s.last = true, s.detail
	}
}

// LimaMilestone turns one line of Lima's host agent log (ha.stderr.log,
// JSON lines with a "msg") into what the VM is doing, or "".
func LimaMilestone(line string) string {
	msg := jsonField(line, "msg")
	switch {
	case msg == "":
		return ""
	case strings.HasPrefix(msg, "Starting QEMU") || strings.HasPrefix(msg, "Starting VZ") || strings.Contains(msg, "hostagent socket created"):
		return "booting"
	case strings.HasPrefix(msg, "Waiting for the essential requirement"):
		return "booting: " + requirement(msg)
	case strings.HasPrefix(msg, "Waiting for the optional requirement"), strings.HasPrefix(msg, "Waiting for the final requirement"):
		return "provisioning: " + requirement(msg)
	case strings.Contains(msg, "READY"):
		return "ready"
	}
	return ""
}

// requirement is the name in "Waiting for the ... requirement N of M: NAME".
func requirement(msg string) string {
	if _, name, ok := strings.Cut(msg, ": "); ok {
		return strings.Trim(name, "`\"'")
	}
	return msg
}

// jsonField reads one string field of a flat JSON object without a
// decoder (the log line is Lima's; a bad one gives "").
func jsonField(line, key string) string {
	i := strings.Index(line, `"`+key+`":"`)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key)+4:]
	var b strings.Builder
	for j := 0; j < len(rest); j++ {
		switch c := rest[j]; c {
		case '"':
			return b.String()
		case '\\':
			if j+1 < len(rest) {
				j++
				switch rest[j] {
				case 'n', 't':
					b.WriteByte(' ')
				default:
					b.WriteByte(rest[j])
				}
			}
		default:
			b.WriteByte(c)
		}
	}
	return ""
}

// Follow reads Lima's host agent log at path (from its size now: a
// restarted VM appends to it) every half second until ctx ends, and sets
// the step's detail at each milestone. The log may not exist yet.
func Follow(ctx context.Context, path string, s *Step) {
	var off int64 = -1
	var partial []byte
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		off, partial = followOnce(path, off, partial, s)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maxFollow caps what one poll reads of the log.
const maxFollow = 1 << 20

func followOnce(path string, off int64, partial []byte, s *Step) (int64, []byte) {
	f, err := os.Open(path)
	if err != nil {
		if off < 0 {
			return 0, nil // not there yet: everything it gets is new
		}
		return off, partial
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return off, partial
	}
	if off < 0 || fi.Size() < off {
		return fi.Size(), nil
	}
	buf := make([]byte, min(fi.Size()-off, maxFollow))
	n, _ := f.ReadAt(buf, off)
	data := append(partial, buf[:n]...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if m := LimaMilestone(string(data[:i])); m != "" {
			s.Set(m)
		}
		data = data[i+1:]
	}
	if len(data) > 64<<10 {
		data = nil // a line this long is no milestone
	}
	return off + int64(n), append([]byte(nil), data...)
}
