// Package boxtest holds box fixtures for tests: state directories written
// the way corral and Lima write them, and a fake limactl. The tests of
// core/box, the app and the CLI share them, so that each checks the same
// rule against the same state.
package boxtest

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
)

// IdleBox is one box of IdleFixture.
type IdleBox struct {
	Meta    boxmeta.Meta
	Running bool
	// EgressAge, when set, is how long ago the box's broker last logged a
	// decision (the egress log's mtime).
	EgressAge time.Duration
	// Sessions are live host sessions (files in run/sessions/<box>/).
	Sessions []box.Session
	Idle     bool // the idle rule stops it
}

// IdleBoxes are the boxes of IdleFixture at now: one that the idle rule
// stops, and one for each reason it keeps a box running. Only idle-a1b2c3
// is due; the others are running with no live session too (except busy),
// which an "idle means no session" rule would wrongly count.
func IdleBoxes(now time.Time) []IdleBox {
	me := os.Getpid() // a live pid, for running VMs and live sessions
	m := func(name, idleStop string, lastAgo time.Duration) boxmeta.Meta {
		return boxmeta.Meta{Name: name, Project: "/src/" + name, Network: config.NetworkBroker, IdleStop: idleStop,
			MemoryCap: 1 << 30, VMType: "qemu", LastActivity: now.Add(-lastAgo)}
	}
	busy := []box.Session{{ID: "s1", PID: me, Agent: "claude", Started: now.Add(-3 * time.Hour)}}
	return []IdleBox{
		{Meta: m("idle-a1b2c3", "30m", 2*time.Hour), Running: true, Idle: true},
		{Meta: m("busy-a1b2c3", "30m", 2*time.Hour), Running: true, Sessions: busy},
		{Meta: m("fresh-a1b2c3", "30m", 5*time.Minute), Running: true},
		{Meta: m("never-a1b2c3", "0s", 5*time.Hour), Running: true},
		{Meta: m("net-a1b2c3", "30m", 2*time.Hour), Running: true, EgressAge: time.Minute},
		{Meta: m("stopped-a1b2c3", "30m", 5*time.Hour)},
	}
}

// IdleFixture writes IdleBoxes(now) into l (box metadata, Lima instance
// directories whose pid files name a live process for running boxes, and
// egress logs) and returns the names of the boxes the idle rule stops.
func IdleFixture(t testing.TB, l paths.Layout, now time.Time) []string {
	t.Helper()
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	var idle []string
	for _, b := range IdleBoxes(now) {
		if err := boxmeta.Write(l, b.Meta); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(l.LimaHome(), b.Meta.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(dir, "lima.yaml"), "vmType: qemu\n")
		if b.Running {
			pid := strconv.Itoa(os.Getpid()) + "\n"
			write(t, filepath.Join(dir, "ha.pid"), pid)
			write(t, filepath.Join(dir, "qemu.pid"), pid)
		}
		if b.EgressAge > 0 {
			log := l.EgressLog(b.Meta.Name)
			write(t, log, "")
			at := now.Add(-b.EgressAge)
			if err := os.Chtimes(log, at, at); err != nil {
				t.Fatal(err)
			}
		}
		for _, ss := range b.Sessions {
			j, err := json.Marshal(ss)
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(l.SessionsDir(b.Meta.Name), ss.ID)
			write(t, p, string(j))
			// Started long ago: only the live pid keeps the box busy.
			at := ss.Started
			_ = os.Chtimes(filepath.Dir(p), at, at)
		}
		if b.Idle {
			idle = append(idle, b.Meta.Name)
		}
	}
	slices.Sort(idle)
	return idle
}

func write(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Limactl is a fake limactl for a LIMA_HOME: `stop NAME` removes the
// instance's pid files, as a real stop leaves them; every call is recorded.
type Limactl struct {
	LimaHome string

	mu    sync.Mutex
	calls [][]string
}

// Command is the lima.CommandFunc of the fake.
func (f *Limactl) Command(ctx context.Context, _ string, args ...string) *exec.Cmd {
	f.mu.Lock()
	f.calls = append(f.calls, args)
	f.mu.Unlock()
	if len(args) >= 2 && args[0] == "stop" {
		dir := filepath.Join(f.LimaHome, args[len(args)-1])
		for _, p := range []string{"ha.pid", "qemu.pid", "vz.pid"} {
			_ = os.Remove(filepath.Join(dir, p))
		}
	}
	return exec.CommandContext(ctx, "true")
}

var _ lima.CommandFunc = (*Limactl)(nil).Command

// Calls returns the argv of every call so far.
func (f *Limactl) Calls() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Service returns a lifecycle service over l whose limactl is the fake and
// whose clock is now. It is built without box.NewService, which refuses
// root (tests may run as root in containers). Its limactl path is never
// looked up or run.
func Service(l paths.Layout, now time.Time, actor audit.Actor) (*box.Service, *Limactl) {
	fake := &Limactl{LimaHome: l.LimaHome()}
	s := &box.Service{Layout: l, Exe: "/bin/false", Actor: actor, Now: func() time.Time { return now },
		Logger: slog.New(slog.DiscardHandler), Lima: &lima.Client{Limactl: "/fake/limactl", LimaHome: l.LimaHome(), Command: fake.Command}}
	return s, fake
}
