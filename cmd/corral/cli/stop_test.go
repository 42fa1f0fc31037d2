package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
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
