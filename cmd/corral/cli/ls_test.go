package cli

import (
	"testing"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
)

type fakeLister []box.Status

func (f fakeLister) List() ([]box.Status, error) { return f, nil }

func TestLsTable(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2,
			Ports: []config.Port{{Host: 3000, Guest: 3000}, {Host: 8080, Guest: 80}}},
			State: boxstate.Running, MemBytes: 1 << 30, Live: 1},
		{Meta: boxmeta.Meta{Name: "api-77aa01", Project: "/src/my api", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1},
			State: boxstate.Stopped},
	}
	for _, c := range []struct {
		tty  bool
		want string
	}{
		{true, "" +
			"BOX         STATE    MEMORY       CPUS  IDLE  SESSIONS  NETWORK  PORTS         PROJECT\n" +
			"web-3f2a1c  Running  1GiB / 4GiB  2     -     1         broker   3000,8080:80  /src/web\n" +
			"api-77aa01  Stopped  - / 2GiB     1     -     0         offline  -             /src/my api\n"},
		{false, "" +
			"BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
			"web-3f2a1c\tRunning\t1GiB / 4GiB\t2\t-\t1\tbroker\t3000,8080:80\t/src/web\n" +
			"api-77aa01\tStopped\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/my api\n"},
	} {
		ios, _, out, errOut := Test(c.tty)
		cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
			o.Service = func() (boxLister, error) { return list, nil }
			return lsRun(o)
		})
		if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != c.want {
			t.Errorf("tty %v: %d\n%q\nwant\n%q", c.tty, code, got, c.want)
		}
	}
}

func TestLsMarksPendingRequests(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2},
			State: boxstate.Stopped},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		o.Pending = func(name, project string) (int, error) { return 3, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"web-3f2a1c*\tStopped\t- / 4GiB\t2\t-\t0\tbroker\t-\t/src/web\n" +
		"* web-3f2a1c: its repository requests 3 host(s), port(s) or toolchain(s); review with corral approve web-3f2a1c\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

func TestLsSaysLearning(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "web-3f2a1c", Project: "/src/web", Network: config.NetworkBroker, MemoryCap: 4 << 30, CPUs: 2},
			State: boxstate.Running, LearningUntil: fixedNow},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"web-3f2a1c\tRunning\t- / 4GiB\t2\t-\t0\tlearning\t-\t/src/web\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}

// A stopped box whose VM state is saved shows as Saved.
func TestLsShowsSaved(t *testing.T) {
	list := fakeLister{
		{Meta: boxmeta.Meta{Name: "api-77aa01", Project: "/src/api", Network: config.NetworkOffline, MemoryCap: 2 << 30, CPUs: 1,
			Saved: &boxmeta.Saved{Tag: box.SuspendTag}}, State: boxstate.Stopped},
	}
	ios, _, out, errOut := Test(false)
	cmd := NewCmdLs(&Factory{IO: ios}, func(o *LsOptions) error {
		o.Service = func() (boxLister, error) { return list, nil }
		return lsRun(o)
	})
	want := "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPORTS\tPROJECT\n" +
		"api-77aa01\tSaved\t- / 2GiB\t1\t-\t0\toffline\t-\t/src/api\n"
	if code, got, _ := execCmd(cmd, out, errOut); code != 0 || got != want {
		t.Errorf("%d\n%q\nwant\n%q", code, got, want)
	}
}
