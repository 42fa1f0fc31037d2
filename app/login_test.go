package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/core/hint"
)

func TestLoginStateOf(t *testing.T) {
	for status, want := range map[int]menu.LoginState{
		-1: menu.LoginUnsupported, smNotRegistered: menu.LoginOff, smEnabled: menu.LoginOn,
		smRequiresApproval: menu.LoginNeedsApproval, smNotFound: menu.LoginUnsupported, 9: menu.LoginUnsupported,
	} {
		if got := loginStateOf(status); got != want {
			t.Errorf("loginStateOf(%d) = %v, want %v", status, got, want)
		}
	}
	for s, want := range map[menu.LoginState]bool{menu.LoginOff: true, menu.LoginOn: false, menu.LoginNeedsApproval: false} {
		if wantLogin(s) != want {
			t.Errorf("wantLogin(%v) = %v", s, !want)
		}
	}
}

// "Open config" on a fresh install: the file is created (0600, in a 0700
// directory) with comments only; an existing file is left as it is.
func TestEnsureConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".corral", "config.toml")
	if err := ensureConfigFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("created %v, %v", fi, err)
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v", di.Mode())
	}
	for _, line := range strings.Split(strings.TrimSpace(starterConfig), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Errorf("starter config line %q is not a comment", line)
		}
	}
	if err := os.WriteFile(path, []byte("agent = \"claude\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ensureConfigFile(path); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "agent = \"claude\"\n" {
		t.Errorf("existing config rewritten: %q", b)
	}
}

func TestNotifierSetupText(t *testing.T) {
	got := notifierSetupText(hint.New(errors.New("no notification daemon"), "start one"))
	if !strings.HasPrefix(got, "notifications unavailable") || !strings.Contains(got, "no notification daemon") || !strings.Contains(got, "\nstart one") {
		t.Errorf("menu error line %q", got)
	}
}

// After Quit the loop touches systray no more (its calls wait for a main
// thread that has stopped serving them): render does nothing and run
// returns even with results pending.
func TestLoopQuitsWithoutRendering(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l := newLoop(Options{RefreshInterval: time.Hour, SweepInterval: time.Hour, Backend: snapshotOnly{}, Notifier: notify.NewNop()}, cancel)
	l.quitting.Store(true)
	l.render() // l.tray is nil: a render would panic
	l.results <- func(context.Context) { l.render() }
	done := make(chan struct{})
	go func() { l.run(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after quit")
	}
}

// snapshotOnly is a Backend whose only call is an empty Snapshot.
type snapshotOnly struct{ Backend }

func (snapshotOnly) Snapshot(context.Context) (State, error) { return State{}, nil }

func TestWaitForIsBounded(t *testing.T) {
	l := newLoop(Options{}, func() {})
	l.workers.Add(1) // a worker stuck in a systray call
	if l.waitFor(10 * time.Millisecond) {
		t.Error("waitFor reported a stuck worker as done")
	}
	l.workers.Done()
	if !l.waitFor(time.Second) {
		t.Error("waitFor did not see the worker finish")
	}
}
