package progress

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuf is a strings.Builder safe for the step's ticker and the test.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clock is a fake time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestQuickStepPrintsNothing(t *testing.T) {
	for _, tty := range []bool{false, true} {
		var b lockedBuf
		c := &clock{t: time.Unix(0, 0)}
		w := &Writer{W: &b, TTY: tty, Tick: time.Millisecond, now: c.now}
		s := w.Start("starting box web")
		c.add(time.Second)
		s.Set("booting")
		time.Sleep(10 * time.Millisecond)
		s.End(nil)
		if b.String() != "" {
			t.Errorf("tty %v: a 1 s step printed %q", tty, b.String())
		}
	}
}

func TestPlainLines(t *testing.T) {
	var b lockedBuf
	c := &clock{t: time.Unix(0, 0)}
	w := &Writer{W: &b, Tick: time.Hour, now: c.now}
	s := w.Start("building golden image g")
	c.add(3 * time.Second)
	s.Set("booting: ssh")
	s.Set("booting: ssh") // the same: no new line
	c.add(40 * time.Second)
	s.Set("provisioning: boot scripts \x1b[31m")
	c.add(10 * time.Second)
	s.End(nil)
	want := "building golden image g: booting: ssh (3 s)\n" +
		"building golden image g: provisioning: boot scripts \\x1b[31m (43 s)\n" +
		"building golden image g: done in 53 s\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestTerminalLine(t *testing.T) {
	var b lockedBuf
	c := &clock{t: time.Unix(0, 0)}
	w := &Writer{W: &b, TTY: true, Tick: time.Hour, now: c.now}
	s := w.Start("starting box web")
	c.add(5 * time.Second)
	s.Set("booting")
	c.add(2 * time.Second)
	s.End(errors.New("no"))
	want := "\r\033[Kstarting box web: booting · 5 s\r\033[Kstarting box web: failed after 7 s\n"
	if b.String() != want {
		t.Errorf("got %q want %q", b.String(), want)
	}
}

func TestLimaMilestone(t *testing.T) {
	for line, want := range map[string]string{
		`{"level":"info","msg":"Starting QEMU (hint: to watch the boot progress, see \"/x/serial*.log\")","time":"t"}`:      "booting",
		`{"level":"info","msg":"Waiting for the essential requirement 1 of 3: \"ssh\"","time":"t"}`:                         "booting: ssh",
		"{\"level\":\"info\",\"msg\":\"Waiting for the optional requirement 1 of 1: `user probe 1/1`\",\"time\":\"t\"}":     "provisioning: user probe 1/1",
		`{"level":"info","msg":"Waiting for the final requirement 1 of 1: \"boot scripts must have finished\"","time":"t"}`: "provisioning: boot scripts must have finished",
		`{"level":"info","msg":"READY. Run ` + "`limactl shell x`" + ` to open the shell.","time":"t"}`:                     "ready",
		`{"level":"debug","msg":"executing script","time":"t"}`:                                                             "",
		`not json`: "",
	} {
		if got := LimaMilestone(line); got != want {
			t.Errorf("%s: %q, want %q", line, got, want)
		}
	}
}

// TestFollow: lines appended to the log while the step runs set its
// detail; what was in the log before does not.
func TestFollow(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ha.stderr.log")
	if err := os.WriteFile(p, []byte(`{"msg":"READY. old"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var b lockedBuf
	c := &clock{t: time.Unix(0, 0)}
	w := &Writer{W: &b, Tick: time.Hour, now: c.now}
	s := w.Start("starting box web")
	c.add(3 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { Follow(ctx, p, s); close(done) }()
	time.Sleep(100 * time.Millisecond)
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"level":"info","msg":"Waiting for the essential requirement 1 of 3: \"ssh\""}` + "\n")
	f.Close()
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(b.String(), "booting: ssh") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	s.End(nil)
	if got := b.String(); !strings.Contains(got, "starting box web: booting: ssh (3 s)\n") || strings.Contains(got, "ready") {
		t.Errorf("got %q", got)
	}
}
