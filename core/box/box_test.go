package box

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/recent"
)

// fakeLima is an in-memory limactl behind the Client's exec seam: it keeps
// instances in a map and can be told to fail a verb. Error paths only; the
// real thing is exercised by the e2e suite.
type fakeLima struct {
	mu    sync.Mutex
	insts map[string]string // name -> status
	fail  map[string]string // verb -> fatal message
	calls []string
	home  string
	// onStart, when set, runs when an instance starts (outside the lock's
	// critical work: it must not call back into the fake).
	onStart func(name string)
}

func (f *fakeLima) made(name string) {
	f.insts[name] = "Stopped"
	_ = os.MkdirAll(filepath.Join(f.home, name), 0o700)
	_ = os.WriteFile(filepath.Join(f.home, name, "lima.yaml"), []byte("{}"), 0o600)
}

func (f *fakeLima) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	verb := args[0]
	fail := func(msg string) *exec.Cmd {
		return exec.Command("sh", "-c", fmt.Sprintf("echo 'time=\"x\" level=fatal msg=\"%s\"' >&2; exit 1", msg))
	}
	if msg, ok := f.fail[verb]; ok {
		return fail(msg)
	}
	last := args[len(args)-1]
	switch verb {
	case "--version":
		return exec.Command("echo", "limactl version 1.2.2")
	case "list":
		var lines []string
		for n, st := range f.insts {
			if len(args) > 2 && !listAll(args) && args[len(args)-1] != n {
				continue
			}
			b, _ := json.Marshal(map[string]any{"name": n, "status": st, "vmType": "qemu"})
			lines = append(lines, string(b))
		}
		if len(args) > 2 && !listAll(args) && len(lines) == 0 {
			return fail("No instance matching " + args[len(args)-1] + " found.")
		}
		return exec.Command("printf", "%s", strings.Join(lines, "\n")+"\n")
	case "create":
		for i, a := range args {
			if a == "--name" {
				f.made(args[i+1])
			} else if strings.HasPrefix(a, "--name=") {
				f.made(strings.TrimPrefix(a, "--name="))
			}
		}
	case "clone":
		f.made(last)
	case "start":
		f.insts[last] = "Running"
		if f.onStart != nil {
			f.onStart(last)
		}
	case "stop":
		f.insts[last] = "Stopped"
	case "delete":
		delete(f.insts, last)
		_ = os.RemoveAll(filepath.Join(f.home, last))
	}
	return exec.Command("true")
}

func newTestService(t *testing.T, f *fakeLima) (*Service, boxmeta.Resolved) {
	t.Helper()
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	f.home = l.LimaHome()
	if err := os.WriteFile(l.GlobalConfig(), []byte("network = \"full\"\ngolden = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: proj, Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &Service{Layout: l, Exe: "/bin/false", Logger: nil, Now: time.Now,
		Lima: &lima.Client{Limactl: "limactl", LimaHome: l.LimaHome(), Command: f.command}}
	s.Logger = discard()
	return s, r
}

func TestUpCreatesAndStarts(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	m, err := s.Up(context.Background(), r, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Provisioning || m.TemplateHash == "" || m.Project != r.Project.Dir {
		t.Errorf("meta %+v", m)
	}
	if f.insts[r.Project.Box] != "Running" {
		t.Errorf("instance %v", f.insts)
	}
	// The menu's Projects offers the folder again (core/recent).
	if rs := recent.Read(s.Layout); len(rs) != 1 || rs[0].Dir != r.Project.Dir {
		t.Errorf("recent projects %+v, want %s", rs, r.Project.Dir)
	}
}

func TestFailedCreateIsRecoveredByNextUp(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{"start": "boot failed"}}
	s, r := newTestService(t, f)
	_, err := s.Up(context.Background(), r, UpOptions{})
	var le *lima.Error
	if err == nil || !errors.As(err, &le) || !strings.Contains(err.Error(), "boot failed") {
		t.Fatalf("err = %v", err)
	}
	m, err := boxmeta.Read(s.Layout, r.Project.Box)
	if err != nil || !m.Provisioning {
		t.Fatalf("half-created box not marked: %+v %v", m, err)
	}
	delete(f.fail, "start")
	m, err = s.Up(context.Background(), r, UpOptions{})
	if err != nil || m.Provisioning {
		t.Fatalf("recovery: %+v %v", m, err)
	}
	deleted := false
	for _, c := range f.calls {
		if strings.HasPrefix(c, "delete") {
			deleted = true
		}
	}
	if !deleted {
		t.Errorf("the half-created instance was not deleted: %v", f.calls)
	}
}

func TestUnknownInstanceIsACollision(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	f.insts[r.Project.Box] = "Stopped"
	_, err := s.Up(context.Background(), r, UpOptions{})
	if err == nil || !strings.Contains(err.Error(), "corral has no record of it") {
		t.Fatalf("err = %v", err)
	}
}

func TestRemoveRunningNeedsForce(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pretend the instance runs: a live ha.pid in its directory.
	dir := filepath.Join(s.Layout.LimaHome(), r.Project.Box)
	_ = os.MkdirAll(dir, 0o700)
	_ = os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	_ = os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600)
	if err := s.Remove(context.Background(), r.Project.Box, false); err == nil || !strings.Contains(hint.Of(err), "rm -f") {
		t.Fatalf("err = %v", err)
	}
	if err := s.Remove(context.Background(), r.Project.Box, true); err != nil {
		t.Fatal(err)
	}
	if _, err := boxmeta.Read(s.Layout, r.Project.Box); !errors.Is(err, boxmeta.ErrNotFound) {
		t.Errorf("metadata left: %v", err)
	}
}

func TestLockSerialises(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, _ := newTestService(t, f)
	l1, err := s.LockBox(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := s.LockBox(ctx, "b"); err == nil {
		t.Fatal("second lock acquired while the first is held")
	}
	l1.Unlock()
	l2, err := s.LockBox(context.Background(), "b")
	if err != nil {
		t.Fatal(err)
	}
	l2.Unlock()
}

// TestLockWaitIsQuietWhenBrief: a lock held for a moment (a session's Up
// on a running box) is waited for without a message; one held past
// quietLockWait is announced once, naming the holder.
func TestLockWaitIsQuietWhenBrief(t *testing.T) {
	s, _ := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	var said strings.Builder
	s.Progress = &said
	for _, hold := range []time.Duration{50 * time.Millisecond, quietLockWait + 300*time.Millisecond} {
		said.Reset()
		l1, err := s.LockBox(context.Background(), "b")
		if err != nil {
			t.Fatal(err)
		}
		go func() { time.Sleep(hold); l1.Unlock() }()
		l2, err := s.LockBox(context.Background(), "b")
		if err != nil {
			t.Fatal(err)
		}
		l2.Unlock()
		n := strings.Count(said.String(), "another corral (pid ")
		if hold < quietLockWait && n != 0 {
			t.Errorf("held %s: said %q", hold, said.String())
		}
		if hold > quietLockWait && n != 1 {
			t.Errorf("held %s: said %q, want one message", hold, said.String())
		}
	}
}

func TestGoldenNameIgnoresProject(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r1 := newTestService(t, f)
	r2, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: t.TempDir(), Platform: r1.Platform})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := goldenTemplate(s, r1)
	b, _ := goldenTemplate(s, r2)
	if golden.Name(a) != golden.Name(b) {
		t.Error("two projects with the same toolchains need different goldens")
	}
}

// TestGoldenNameIgnoresPerBootSettings: what the guest applies at every
// boot (sudo, the network mode, the git shadow) does not make another
// golden image, so a box with sudo clones the same one as a box without.
func TestGoldenNameIgnoresPerBootSettings(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	// An image of its own and an agent with nothing to download: the
	// golden then has no network (otherwise it gets it, and with it sudo).
	img := filepath.Join(t.TempDir(), "image.qcow2")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c0 := r.Loaded.Config
	shell := "shell"
	c0.Image, c0.Agent = &img, &shell
	r.Loaded.Config = c0
	base, err := goldenTemplate(s, r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(base), "NETWORK: offline") {
		t.Fatalf("the golden of a config with an image has network:\n%s", base)
	}
	yes, no, broker := true, false, config.NetworkBroker
	for name, change := range map[string]func(*config.Config){
		"sudo":       func(c *config.Config) { c.Sudo = &yes },
		"no sudo":    func(c *config.Config) { c.Sudo = &no },
		"broker":     func(c *config.Config) { c.Network = &broker },
		"git shadow": func(c *config.Config) { c.GitShadow = &no },
	} {
		v := r
		c := v.Loaded.Config
		change(&c)
		v.Loaded.Config = c
		got, err := goldenTemplate(s, v)
		if err != nil {
			t.Fatal(err)
		}
		if golden.Name(got) != golden.Name(base) {
			t.Errorf("%s: another golden image (%s, not %s)", name, golden.Name(got), golden.Name(base))
		}
	}
}

// TestRebuildChecksLimaFirst: when limactl does not work, rebuild removes
// nothing (the box and its metadata stay).
func TestRebuildChecksLimaFirst(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	f.fail["--version"] = "broken"
	if _, err := s.Rebuild(context.Background(), r, UpOptions{}); err == nil {
		t.Fatal("rebuild succeeded with a broken limactl")
	}
	if _, ok := f.insts[r.Project.Box]; !ok {
		t.Error("the instance was removed")
	}
	if _, err := boxmeta.Read(s.Layout, r.Project.Box); err != nil {
		t.Errorf("the metadata was removed: %v", err)
	}
	for _, c := range f.calls {
		if strings.HasPrefix(c, "delete") || strings.HasPrefix(c, "stop") {
			t.Errorf("limactl %s ran", c)
		}
	}
}

// listAll: a `limactl list` of every instance (no name after the format).
func listAll(args []string) bool {
	last := args[len(args)-1]
	return last == "--json" || last == "{{json .}}"
}
