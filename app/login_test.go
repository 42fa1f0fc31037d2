package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/core/hint"
)

func TestLoginStateOf(t *testing.T) {
	for _, tc := range []struct {
		status  int
		bundled bool
		want    menu.LoginState
	}{
		{-1, true, menu.LoginUnsupported}, {smNotRegistered, true, menu.LoginOff}, {smEnabled, true, menu.LoginOn},
		{smRequiresApproval, true, menu.LoginNeedsApproval},
		// A fresh install: NotFound until the first registration.
		{smNotFound, true, menu.LoginOff},
		// A binary outside Corral.app cannot be a login item.
		{smNotFound, false, menu.LoginUnsupported},
		{9, true, menu.LoginUnsupported},
	} {
		if got := loginStateOf(tc.status, tc.bundled); got != tc.want {
			t.Errorf("loginStateOf(%d, bundled %v) = %v, want %v", tc.status, tc.bundled, got, tc.want)
		}
	}
	for s, want := range map[menu.LoginState]bool{menu.LoginOff: true, menu.LoginOn: false, menu.LoginNeedsApproval: false} {
		if wantLogin(s) != want {
			t.Errorf("wantLogin(%v) = %v", s, !want)
		}
	}
}

// A click reports registering's own error, else a state that is not what
// was asked for; nothing when macOS did as asked.
func TestLoginOutcome(t *testing.T) {
	denied := errors.New("Operation not permitted")
	for _, tc := range []struct {
		want   bool
		setErr error
		st     menu.LoginState
		stErr  error
		says   string // "" = no error
	}{
		{true, nil, menu.LoginOn, nil, ""},
		{true, nil, menu.LoginNeedsApproval, nil, ""},
		{false, nil, menu.LoginOff, nil, ""},
		{true, denied, menu.LoginOff, nil, "registering Corral as a login item: Operation not permitted"},
		{false, denied, menu.LoginOn, nil, "removing Corral from the login items: Operation not permitted"},
		{true, nil, menu.LoginOff, nil, "macOS reported no error but does not list it (not registered)"},
		{true, nil, menu.LoginUnsupported, nil, "does not list it (not found)"},
		{false, nil, menu.LoginNeedsApproval, nil, "still lists it (waiting for approval)"},
		{true, nil, menu.LoginOff, errors.New("boom"), "reading the state afterwards: boom"},
	} {
		err := loginOutcome(tc.want, tc.setErr, tc.st, tc.stErr)
		switch {
		case tc.says == "" && err != nil:
			t.Errorf("%+v: %v", tc, err)
		case tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)):
			t.Errorf("%+v: %v, want %q", tc, err, tc.says)
		case tc.setErr != nil && !errors.Is(err, tc.setErr):
			t.Errorf("%+v: %v does not wrap registering's error", tc, err)
		}
	}
}

// fakeLogin is a LoginItem whose state the test sets, counting reads.
type fakeLogin struct {
	mu    sync.Mutex
	st    menu.LoginState
	reads int
}

func (f *fakeLogin) State() (menu.LoginState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.st, nil
}

func (f *fakeLogin) SetEnabled(bool) error { return nil }

func (f *fakeLogin) set(st menu.LoginState) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

// Opening the menu reads the login item again: a change made in System
// Settings shows at the next opening.
func TestMenuOpeningRereadsLogin(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fl := &fakeLogin{st: menu.LoginOff}
	l := newLoop(Options{Login: fl, Notifier: notify.NewNop()}, cancel)
	l.ui.Login = menu.LoginOff
	l.quitting.Store(true) // render is a no-op: there is no tray here
	opened := func() {
		t.Helper()
		l.onMenuOpened(ctx)
		select {
		case f := <-l.results:
			f(ctx)
		case <-time.After(5 * time.Second):
			t.Fatal("the login state was not read")
		}
	}
	fl.set(menu.LoginOn) // ticked in System Settings
	opened()
	if l.ui.Login != menu.LoginOn || fl.reads != 1 {
		t.Errorf("after opening: state %v, %d reads", l.ui.Login, fl.reads)
	}
	fl.set(menu.LoginNeedsApproval)
	opened()
	if l.ui.Login != menu.LoginNeedsApproval || fl.reads != 2 {
		t.Errorf("after opening again: state %v, %d reads", l.ui.Login, fl.reads)
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
