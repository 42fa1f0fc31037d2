package qmp

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/qmp/qmptest"
)

// closeConn, as an answer, makes the fake close the connection (qemu
// exiting).
const closeConn = qmptest.Close

const greeting = qmptest.Greeting

// fakeQemu serves QMP on a unix socket in a temp dir (qmptest.Serve): it
// sends greet, then answers each command with answer(execute, arguments).
// The commands it got are sent on cmds.
func fakeQemu(t *testing.T, greet string, answer func(cmd string, args map[string]any) []string) (string, <-chan string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "qmp") // short: unix socket paths are capped
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "qmp.sock")
	cmds := make(chan string, 16)
	qmptest.Serve(t, sock, greet, func(cmd string, args map[string]any) []string {
		cmds <- cmd
		return answer(cmd, args)
	})
	return sock, cmds
}

func okAnswers(cmd string, args map[string]any) []string {
	switch cmd {
	case "qmp_capabilities", "stop", "cont":
		return []string{`{"return": {}}`}
	case "query-status":
		return []string{`{"event": "RESUME", "data": {}, "timestamp": {"seconds": 1, "microseconds": 2}}`,
			`{"return": {"status": "paused", "singlestep": false, "running": false}}`}
	case "human-monitor-command":
		switch args["command-line"] {
		case "savevm corral-suspend", "delvm corral-suspend":
			return []string{`{"return": ""}`}
		case "savevm busy":
			return []string{`{"return": "Error: Migration is disabled when VirtFS export path '/p' is mounted in the guest using mount_tag 'm0'\r\n"}`}
		}
		return []string{`{"return": "ID TAG\r\n"}`}
	}
	return []string{`{"error": {"class": "CommandNotFound", "desc": "The command ` + cmd + ` has not been found"}}`}
}

func TestClient(t *testing.T) {
	ctx := context.Background()
	sock, cmds := fakeQemu(t, greeting, okAnswers)
	c, err := Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := <-cmds; got != "qmp_capabilities" {
		t.Errorf("first command %q", got)
	}
	st, err := c.QueryStatus(ctx)
	if err != nil || st.Running || st.Status != "paused" {
		t.Errorf("QueryStatus = %+v, %v", st, err)
	}
	if err := c.Stop(ctx); err != nil {
		t.Error(err)
	}
	if err := c.SaveVM(ctx, "corral-suspend"); err != nil {
		t.Error(err)
	}
	if err := c.DelVM(ctx, "corral-suspend"); err != nil {
		t.Error(err)
	}
	err = c.SaveVM(ctx, "busy")
	if err == nil || !strings.Contains(err.Error(), "Migration is disabled") || strings.ContainsAny(err.Error(), "\r\n") {
		t.Errorf("savevm with output: %v", err)
	}
	if out, err := c.HumanMonitorCommand(ctx, "info snapshots"); err != nil || out != "ID TAG\r\n" {
		t.Errorf("info snapshots = %q, %v", out, err)
	}
	var qe *Error
	if err := c.Execute(ctx, "no-such", nil, nil); !errors.As(err, &qe) || qe.Class != "CommandNotFound" || qe.Command != "no-such" {
		t.Errorf("unknown command: %v", err)
	}
	// A tag never reaches the monitor unchecked.
	if err := c.SaveVM(ctx, "x; quit"); err == nil {
		t.Error("a tag with a space was sent")
	}
}

func TestDialRefusesWhatIsNotQemu(t *testing.T) {
	for name, greet := range map[string]string{
		"not json":       "SSH-2.0-OpenSSH_9.2",
		"not a greeting": `{"return": {}}`,
		"unknown key":    `{"QMP": {}, "extra": 1}`,
		"two values":     `{"QMP": {}} {"QMP": {}}`,
	} {
		t.Run(name, func(t *testing.T) {
			sock, _ := fakeQemu(t, greet, okAnswers)
			if c, err := Dial(context.Background(), sock); err == nil {
				c.Close()
				t.Fatal("Dial succeeded")
			}
		})
	}
}

func TestOversizeMessage(t *testing.T) {
	sock, _ := fakeQemu(t, greeting, func(cmd string, args map[string]any) []string {
		if cmd == "qmp_capabilities" {
			return []string{`{"return": {}}`}
		}
		return []string{`{"return": "` + strings.Repeat("x", MaxMessage) + `"}`}
	})
	c, err := Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.HumanMonitorCommand(context.Background(), "info snapshots"); !errors.Is(err, ErrTooLong) {
		t.Errorf("oversize answer: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	// No greeting: Dial waits for one until the deadline.
	sock, _ := fakeQemu(t, "", okAnswers)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if c, err := Dial(ctx, sock); err == nil {
		c.Close()
		t.Fatal("Dial without a greeting succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Dial took %v", d)
	}

	// A command that is never answered ends when its context does.
	sock, _ = fakeQemu(t, greeting, func(cmd string, _ map[string]any) []string {
		if cmd == "qmp_capabilities" {
			return []string{`{"return": {}}`}
		}
		return nil
	})
	c, err := Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel2)
	if err := c.Stop(ctx2); err == nil {
		t.Error("unanswered command succeeded")
	}
}

func TestQuitToleratesClose(t *testing.T) {
	sock, _ := fakeQemu(t, greeting, func(cmd string, _ map[string]any) []string {
		if cmd == "qmp_capabilities" {
			return []string{`{"return": {}}`}
		}
		return []string{`{"event": "SHUTDOWN", "data": {"guest": false, "reason": "host-qmp-quit"}, "timestamp": {"seconds": 1, "microseconds": 2}}`, closeConn}
	})
	c, err := Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Quit(context.Background()); err != nil {
		t.Errorf("Quit: %v", err)
	}
}
