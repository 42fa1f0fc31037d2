package qemuwrap

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/qemu/qemutest"
)

func writeGoldenTemplate(t *testing.T, l paths.Layout, name, network string) {
	t.Helper()
	dir := filepath.Join(l.LimaHome(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	y := "vmType: qemu\nparam:\n  AGENT: shell\n  NETWORK: " + network + "\n  PROXY_PORT: \"0\"\n"
	if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlanQemu(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for name, network := range map[string]config.Network{"b-1": config.NetworkBroker, "o-1": config.NetworkOffline, "f-1": config.NetworkFull, "x-1": "mesh"} {
		if err := boxmeta.Write(l, boxmeta.Meta{Name: name, Network: network, BrokerPort: 42123, VMType: "qemu"}); err != nil {
			t.Fatal(err)
		}
	}
	writeGoldenTemplate(t, l, "golden-000000000001", "offline")
	writeGoldenTemplate(t, l, "golden-000000000002", "full")
	writeGoldenTemplate(t, l, "golden-000000000003", "broker")
	exe := "/opt/corral/bin/corral"

	tests := []struct {
		name    string
		args    []string
		funnel  *qemu.Funnel
		offline bool
		wantErr string
	}{
		{name: "broker box", args: qemutest.LimaLaunch(t, l.LimaHome(), "b-1"),
			funnel: &qemu.Funnel{GuestFwdPort: 42123, GuestConnCmd: exe + " guest-conn b-1"}},
		{name: "offline box", args: qemutest.LimaLaunch(t, l.LimaHome(), "o-1"), offline: true},
		{name: "full box", args: qemutest.LimaLaunch(t, l.LimaHome(), "f-1")},
		{name: "offline golden", args: qemutest.LimaLaunch(t, l.LimaHome(), "golden-000000000001"), offline: true},
		{name: "full golden", args: qemutest.LimaLaunch(t, l.LimaHome(), "golden-000000000002")},
		{name: "broker golden", args: qemutest.LimaLaunch(t, l.LimaHome(), "golden-000000000003"), wantErr: "no broker"},
		{name: "golden without template", args: qemutest.LimaLaunch(t, l.LimaHome(), "golden-000000000009"), wantErr: "template"},
		{name: "unknown box", args: qemutest.LimaLaunch(t, l.LimaHome(), "nobody-1"), wantErr: "no such box"},
		{name: "unknown network", args: qemutest.LimaLaunch(t, l.LimaHome(), "x-1"), wantErr: "unknown network"},
		{name: "another LIMA_HOME", args: qemutest.LimaLaunch(t, "/elsewhere/lima", "b-1"), wantErr: "not in corral's LIMA_HOME"},
		{name: "no pidfile", args: []string{"-m", "1024", "-netdev", "user,id=net0"}, wantErr: "no -pidfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(tt.args, l, exe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p.Options.Funnel == nil) != (tt.funnel == nil) || p.Options.Funnel != nil && !reflect.DeepEqual(*p.Options.Funnel, *tt.funnel) || p.Options.Offline != tt.offline {
				t.Errorf("plan = %+v (funnel %+v), want funnel %+v offline %v", p, p.Options.Funnel, tt.funnel, tt.offline)
			}
		})
	}
}

// TestWrapperOutputPassesTheProof checks that what the wrapper execs is what
// the session check accepts: the two sides of the funnel agree.
func TestWrapperOutputPassesTheProof(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, network := range []config.Network{config.NetworkBroker, config.NetworkOffline} {
		name := string(network) + "-1"
		if err := boxmeta.Write(l, boxmeta.Meta{Name: name, Network: network, BrokerPort: 42999, VMType: "qemu"}); err != nil {
			t.Fatal(err)
		}
		in := qemutest.LimaLaunch(t, l.LimaHome(), name)
		p, err := NewPlan(in, l, "/Users/A B/corral,x/corral")
		if err != nil {
			t.Fatal(err)
		}
		out, err := qemu.Rewrite(in, qemu.Options{Accel: qemu.AccelTCG, Funnel: p.Options.Funnel, Offline: p.Options.Offline})
		if err != nil {
			t.Fatal(err)
		}
		want := funnel.Want{VMType: "qemu", Network: network, BrokerPort: 42999}
		if err := funnel.CheckArgs(out, funnel.PIDFile(l.LimaHome(), name), name, want); err != nil {
			t.Errorf("%s: wrapper output fails the proof: %v", network, err)
		}
		if err := funnel.CheckArgs(in, funnel.PIDFile(l.LimaHome(), name), name, want); !errors.Is(err, funnel.ErrNotEnforced) {
			t.Errorf("%s: Lima's own argv passes the proof: %v", network, err)
		}
	}
}

// TestPlanQemuGitlinks: a project with a populated submodule, an empty
// gitlink path and a missing one. The plan binds the populated one's .git
// read-only, gives each empty one a private directory of the box's own
// (stable across plans), and refuses a start when the box left a symbolic
// link at a gitlink path.
func TestPlanQemuGitlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	child, proj := filepath.Join(base, "child"), filepath.Join(base, "proj")
	g := func(dir string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@example.test"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, d := range []string{child, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		g(d, "init", "-q")
	}
	g(child, "commit", "-q", "--allow-empty", "-m", "c")
	g(proj, "submodule", "add", "-q", child, "sub")
	g(proj, "update-index", "--add", "--cacheinfo", "160000,"+g(child, "rev-parse", "HEAD")+",vendor/lib")
	g(proj, "commit", "-qm", "super")
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "p-1", Network: config.NetworkFull, VMType: "qemu", Project: proj}); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-1"), l, "/opt/corral/bin/corral")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(proj, ".git"), filepath.Join(proj, "sub", ".git")}
	if !slices.Equal(p.ReadOnly, want) {
		t.Errorf("ReadOnly = %q, want %q", p.ReadOnly, want)
	}
	if len(p.Private) != 1 || p.Private[0].Target != filepath.Join(proj, "vendor", "lib") || !strings.HasPrefix(p.Private[0].Source, l.GitlinksDir("p-1")+"/") {
		t.Errorf("Private = %+v", p.Private)
	}
	again, _ := NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-1"), l, "/opt/corral/bin/corral")
	if !slices.Equal(again.Private, p.Private) {
		t.Errorf("a second plan moved the private directory: %+v then %+v", p.Private, again.Private)
	}
	if err := os.MkdirAll(filepath.Join(proj, "vendor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(proj, ".git"), filepath.Join(proj, "vendor", "lib")); err != nil {
		t.Fatal(err)
	}
	_, err = NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-1"), l, "/opt/corral/bin/corral")
	if !errors.Is(err, gitshadow.ErrGitlink) || !strings.Contains(err.Error(), "vendor/lib is a symbolic link") || !strings.Contains(hint.Of(err), "rm "+filepath.Join(proj, "vendor", "lib")) {
		t.Errorf("a symlink at a gitlink path: %v (hint %q)", err, hint.Of(err))
	}
}

// TestPlanQemuHide: the box's hide paths are covered for qemu with an
// empty read-only directory or file of the same type; a path that is not
// there, is a symbolic link, passes through one, or is a FIFO is left to
// the guest and reported; the empty sources are created, and a planted
// entry in the empty directory refuses the start.
func TestPlanQemuHide(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	for _, d := range []string{"secret", "real/inner"} {
		if err := os.MkdirAll(filepath.Join(proj, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".env", "secret/key"} {
		if err := os.WriteFile(filepath.Join(proj, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("real", filepath.Join(proj, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(proj, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	hide := []string{"secret", ".env", "missing", "link", "link/inner", "fifo", ".env/x"}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "p-1", Network: config.NetworkFull, VMType: "qemu", Project: proj, GitShadowOff: true, Hide: hide}); err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-1"), l, "/opt/corral/bin/corral")
	if err != nil {
		t.Fatal(err)
	}
	want := []qemu.PrivateMount{
		{Source: filepath.Join(l.HiddenDir(), "empty"), Target: filepath.Join(proj, "secret"), Kind: qemu.PrivateHidden},
		{Source: filepath.Join(l.HiddenDir(), "empty-file"), Target: filepath.Join(proj, ".env"), Kind: qemu.PrivateHidden},
	}
	if !slices.Equal(p.Private, want) {
		t.Errorf("Private = %+v, want %+v", p.Private, want)
	}
	wantUnhidden := []string{"missing: not there at the start", "link: a symbolic link (" + filepath.Join(proj, "link") + ")",
		"link/inner: a symbolic link (" + filepath.Join(proj, "link") + ")", "fifo: neither a directory nor a regular file", ".env/x: not under a directory"}
	if !slices.Equal(p.Unhidden, wantUnhidden) {
		t.Errorf("Unhidden = %q, want %q", p.Unhidden, wantUnhidden)
	}
	if fi, err := os.Stat(filepath.Join(l.HiddenDir(), "empty-file")); err != nil || fi.Size() != 0 || !fi.Mode().IsRegular() {
		t.Errorf("empty file: %v %v", fi, err)
	}
	// Something planted in the empty directory would be shown to the VM.
	if err := os.Chmod(filepath.Join(l.HiddenDir(), "empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(l.HiddenDir(), "empty", "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-1"), l, "/opt/corral/bin/corral"); err == nil || !strings.Contains(err.Error(), "must be an empty directory") {
		t.Errorf("a non-empty cover: %v", err)
	}
	// A hide path that leaves the project (metadata is corral's own, but
	// checked again) is refused.
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "p-2", Network: config.NetworkFull, VMType: "qemu", Project: proj, GitShadowOff: true, Hide: []string{"../x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewPlan(qemutest.LimaLaunch(t, l.LimaHome(), "p-2"), l, "/opt/corral/bin/corral"); err == nil || !strings.Contains(err.Error(), "not inside the project") {
		t.Errorf("../x: %v", err)
	}
}

func TestExports(t *testing.T) {
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	a, b := filepath.Join(dir, "a,b"), filepath.Join(dir, "real")
	if err := os.MkdirAll(a, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(b, link); err != nil {
		t.Fatal(err)
	}
	args := []string{"-m", "1G", "-virtfs", "local,mount_tag=m0,path=" + strings.ReplaceAll(a, ",", ",,") + ",security_model=none",
		"-virtfs", "local,path=" + link + ",mount_tag=m1,readonly=on", "-device", "virtio-net-pci"}
	got, err := exports(args)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{a, b}; !slices.Equal(got, want) {
		t.Errorf("exports = %q, want %q (a doubled comma is a comma, links resolved)", got, want)
	}
	if got, err := exports([]string{"-virtfs", "local,path=" + filepath.Join(dir, "missing", "..", "m")}); err != nil || !slices.Equal(got, []string{filepath.Join(dir, "m")}) {
		t.Errorf("a missing export: %q, %v; want it kept, cleaned", got, err)
	}
	if _, err := exports([]string{"-virtfs", "local,path=rel"}); err == nil {
		t.Error("a relative export is not an error")
	}
}

// The balloon: every boot of a box or a golden gets it; a resume only
// when the saved state was made with it (a state saved by a corral from
// before the balloon, or from a VM started without it, loads only into a
// machine without one). The rewritten argv follows the plan.
func TestPlanBalloon(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	metas := map[string]*boxmeta.Saved{
		"boot-1":    nil,
		"with-1":    {Tag: "corral-suspend", Balloon: true},
		"without-1": {Tag: "corral-suspend"},
	}
	for name, saved := range metas {
		if err := boxmeta.Write(l, boxmeta.Meta{Name: name, Network: config.NetworkFull, VMType: "qemu", Saved: saved}); err != nil {
			t.Fatal(err)
		}
	}
	writeGoldenTemplate(t, l, "golden-000000000001", "offline")
	for name, want := range map[string]bool{"boot-1": true, "with-1": true, "without-1": false, "golden-000000000001": true} {
		args := qemutest.LimaLaunch(t, l.LimaHome(), name)
		p, err := NewPlan(args, l, "/opt/corral/bin/corral")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Options.Balloon != want {
			t.Errorf("%s: Balloon = %v, want %v", name, p.Options.Balloon, want)
		}
		out, err := qemu.Rewrite(args, p.Options)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if qemu.HasBalloon(out) != want {
			t.Errorf("%s: rewritten argv has a balloon: %v, want %v", name, qemu.HasBalloon(out), want)
		}
		if saved := metas[name]; saved != nil && !slices.Contains(out, "-loadvm") {
			t.Errorf("%s: a saved box not resumed: %q", name, out)
		}
		if d := p.DescribeMemory(); strings.Contains(d, "free-page reporting") != want {
			t.Errorf("%s: DescribeMemory = %q", name, d)
		}
	}
}
