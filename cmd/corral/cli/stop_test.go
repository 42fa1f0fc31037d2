package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// TestStopIdle: over the shared idle fixture (core/box's sweep test and the
// app's menu test use it too), `corral stop --idle` stops exactly the
// boxes the rule marks due, the ones the menu counts.
func TestStopIdle(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	now := time.Now()
	want := boxtest.IdleFixture(t, l, now)
	svc, _ := boxtest.Service(l, now, audit.ActorCLI)
	io, _, out, errOut := Test(false)
	f := &Factory{
		IO:         io,
		Layout:     func() (paths.Layout, error) { return l, nil },
		Platform:   config.Platform{OS: "linux", Arch: "amd64"},
		LookupEnv:  func(string) (string, bool) { return "", false },
		NewService: func() (*box.Service, error) { return svc, nil },
	}
	var wantOut strings.Builder
	for _, b := range want {
		wantOut.WriteString("stopped idle box " + b + "\n")
	}
	if code := Run(f, []string{"stop", "--idle"}); code != 0 || out.String() != wantOut.String() || errOut.String() != "" {
		t.Errorf("stop --idle: %d %q %q, want %q", code, out, errOut, wantOut.String())
	}
	out.Reset()
	if code := Run(f, []string{"stop", "--idle"}); code != 0 || out.String() != "no idle boxes\n" {
		t.Errorf("second stop --idle: %d %q", code, out)
	}
}

type fakeStopper struct{ stopped []string }

func (f *fakeStopper) Stop(_ context.Context, name string, _ audit.Kind) error {
	f.stopped = append(f.stopped, name)
	return nil
}
func (f *fakeStopper) Save(_ context.Context, name string, kind audit.Kind) error {
	f.stopped = append(f.stopped, "save:"+name+":"+string(kind))
	return nil
}
func (f *fakeStopper) Sweep(context.Context) ([]string, error) { return nil, nil }
func (f *fakeStopper) List() ([]box.Status, error) {
	st := func(name string, s boxstate.State, broker bool) box.Status {
		return box.Status{Meta: boxmeta.Meta{Name: name}, State: s, Broker: broker}
	}
	return []box.Status{st("run-1", boxstate.Running, true), st("off-1", boxstate.Stopped, false),
		st("broker-1", boxstate.Stopped, true), st("broken-1", boxstate.Broken, false), st("gone-1", boxstate.Missing, false)}, nil
}

func TestStopNamesOrProject(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"a-1", "b-2"}, "stopped a-1\nstopped b-2\n"},
		{nil, "stopped web-3f2a1c\n"},
		{[]string{"--idle"}, "no idle boxes\n"},
		{[]string{"--save", "a-1"}, "saved a-1\n"},
		{[]string{"--save"}, "saved web-3f2a1c\n"},
		// The cask's uninstall: every box whose VM or broker runs.
		{[]string{"--all"}, "stopped run-1\nstopped broker-1\nstopped broken-1\n"},
	} {
		fake := &fakeStopper{}
		ios, _, out, errOut := Test(false)
		cmd := NewCmdStop(&Factory{IO: ios}, func(o *StopOptions) error {
			o.Service = func() (boxStopper, error) { return fake, nil }
			o.Project = func() (string, error) { return "web-3f2a1c", nil }
			return stopRun(o)
		})
		if code, got, _ := execCmd(cmd, out, errOut, c.args...); code != 0 || got != c.want {
			t.Errorf("stop %q: %d %q, want %q", c.args, code, got, c.want)
		}
		for _, s := range fake.stopped {
			if strings.HasPrefix(s, "save:") && !strings.HasSuffix(s, ":save") {
				t.Errorf("stop %q: %s, want audit kind save", c.args, s)
			}
		}
	}
}
