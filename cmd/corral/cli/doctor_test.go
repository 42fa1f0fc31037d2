package cli

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/secret"
)

type fakeDoctor struct {
	facts box.HostFacts
	opt   box.HostFactsOptions
	box   []box.Check
	asked string
}

func (f *fakeDoctor) HostFacts(_ context.Context, _ secret.Store, opt box.HostFactsOptions) box.HostFacts {
	f.opt = opt
	return f.facts
}
func (f *fakeDoctor) DoctorBox(_ context.Context, name string, _ box.DoctorBoxOptions) []box.Check {
	f.asked = name
	return f.box
}

func runDoctor(t *testing.T, fd *fakeDoctor, args ...string) (int, string) {
	t.Helper()
	io, _, out, errOut := Test(true)
	cmd := NewCmdDoctor(&Factory{IO: io}, func(o *DoctorOptions) error {
		o.Service = func() (doctorService, error) { return fd, nil }
		o.BoxOptions = func(_ context.Context, name string) (string, box.DoctorBoxOptions, []box.Check) {
			return name, box.DoctorBoxOptions{}, nil
		}
		return doctorRun(o)
	})
	cmd.SetArgs(args)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if err != nil {
		printError(errOut, err)
	}
	return exitCode(err), out.String()
}

func healthyFacts() box.HostFacts {
	return box.HostFacts{
		GOOS: "linux", LimaVersion: lima.Version{Major: 1, Minor: 2, Patch: 2}, LimactlPath: "/usr/local/bin/limactl",
		QemuPath: "/usr/bin/qemu-system-x86_64", QemuImgPath: "/usr/bin/qemu-img", KVM: true,
		GitCLIs:  map[string]string{"gh": "/usr/bin/gh"},
		LimaHome: "/h/lima", MaxNameLen: 40, HostMemory: 8 << 30,
	}
}

func TestDoctorHealthy(t *testing.T) {
	code, out := runDoctor(t, &fakeDoctor{facts: healthyFacts()})
	want := `ok    lima: /usr/local/bin/limactl 1.2.2 (the version corral is tested with)
ok    qemu: /usr/bin/qemu-system-x86_64
ok    qemu-img: /usr/bin/qemu-img
ok    git shadow: host-enforced: qemu sees each project's git directory read-only (private user and mount namespace)
ok    acceleration: KVM
ok    git host CLIs: gh /usr/bin/gh, glab not installed
ok    state directory: private (0700, yours)
ok    socket paths: box names up to 40 bytes fit
ok    memory budget: running boxes' memory caps 0B of 8GiB host RAM
ok    keychain: reachable
all 10 checks passed
`
	if code != 0 || out != want {
		t.Errorf("code %d\n%s\nwant:\n%s", code, out, want)
	}
}

// TestDoctorGitShadow: without user namespaces doctor fails and names the
// way out; an opted-out box is listed.
func TestDoctorGitShadow(t *testing.T) {
	f := healthyFacts()
	f.UserNS = errors.New("unprivileged user namespaces are not available: unshare: exit status 1")
	f.GitShadowOff = []string{"api-1"}
	code, out := runDoctor(t, &fakeDoctor{facts: f})
	for _, want := range []string{
		"FAIL  git shadow: qemu cannot get a private user and mount namespace",
		"fix: allow unprivileged user namespaces",
		"git_shadow = false",
		"ok    git shadow opt-out: boxes api-1 may write their project's .git",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("code %d", code)
	}
}

func TestDoctorBoxFailure(t *testing.T) {
	fd := &fakeDoctor{facts: healthyFacts(), box: []box.Check{
		{Check: "box web-1", OK: true, Detail: "running"},
		{Check: "unit corral-project.service", Detail: "corral-project.service is inactive in the box; sessions are refused", Fix: "corral stop web-1 && corral start web-1"},
	}}
	code, out := runDoctor(t, fd, "web-1")
	if fd.asked != "web-1" || code != 1 {
		t.Fatalf("asked %q code %d", fd.asked, code)
	}
	tail := `ok    box web-1: running
FAIL  unit corral-project.service: corral-project.service is inactive in the box; sessions are refused
      fix: corral stop web-1 && corral start web-1
1 of 12 checks failed
`
	if len(out) < len(tail) || out[len(out)-len(tail):] != tail {
		t.Errorf("output:\n%s", out)
	}
	code, out = runDoctor(t, fd, "web-1", "--json")
	var doc struct {
		Schema string           `json:"schema"`
		Checks []map[string]any `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Schema != SchemaDoctor {
		t.Fatal(code, err, out)
	}
	got := doc.Checks
	last := got[len(got)-1]
	if len(got) != 12 || last["check"] != "unit corral-project.service" || last["ok"] != false || last["fix"] != "corral stop web-1 && corral start web-1" {
		t.Errorf("%v", last)
	}
	if _, ok := got[0]["fix"]; !ok {
		t.Errorf("fix missing from a passed check: %v", got[0])
	}
}

// The image check is doctor's one network call: --offline skips it.
func TestDoctorOfflineSkipsTheImageProbe(t *testing.T) {
	fd := &fakeDoctor{facts: healthyFacts()}
	runDoctor(t, fd)
	if fd.opt.ImagesFor == "" {
		t.Errorf("doctor without --offline does not probe the image")
	}
	runDoctor(t, fd, "--offline")
	if fd.opt.ImagesFor != "" {
		t.Errorf("doctor --offline probes the image for %q", fd.opt.ImagesFor)
	}
}
