package cli

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// portEnv is a project whose box exists (metadata and a Lima instance
// directory, running when running is set) over the fake limactl, with
// ssh recorded instead of run.
func portEnv(t *testing.T, running bool) (env, *Factory, *[][]string, func() (string, string)) {
	t.Helper()
	e := setup(t, "")
	// A short home: the ssh control socket's path must fit sun_path.
	home, err := os.MkdirTemp("/tmp", "cpt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	e.home = home
	p, err := project.Resolve(e.proj, filepath.Join(home, "lima"))
	if err != nil {
		t.Fatal(err)
	}
	e.box = p.Box
	l := paths.Layout{Home: home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, VMType: "qemu"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.LimaHome(), e.box)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(dir, 0o700))
	must(os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte("vmType: qemu\n"), 0o600))
	if running {
		pid := strconv.Itoa(os.Getpid()) + "\n"
		must(os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(pid), 0o600))
		must(os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(pid), 0o600))
		must(os.MkdirAll(l.SSHDir(), 0o700))
		ln, err := net.Listen("unix", l.SSHMaster(e.box)) // a live ssh master
		must(err)
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
	var calls [][]string
	svc.GuestCommand = func(ctx context.Context, argv []string) *exec.Cmd {
		calls = append(calls, argv)
		return exec.CommandContext(ctx, "true")
	}
	io, _, out, errOut := Test(false)
	f := &Factory{
		IO:         io,
		Dir:        e.proj,
		Layout:     func() (paths.Layout, error) { return l, nil },
		Platform:   config.Platform{OS: "linux", Arch: "amd64"},
		LookupEnv:  func(string) (string, bool) { return "", false },
		NewService: func() (*box.Service, error) { return svc, nil },
	}
	outs := func() (string, string) {
		o, eo := out.String(), errOut.String()
		out.Reset()
		errOut.Reset()
		return o, eo
	}
	return e, f, &calls, outs
}

func TestPortRunningBox(t *testing.T) {
	e, f, calls, outs := portEnv(t, true)
	trusted := filepath.Join(e.home, "projects", e.box+".toml")
	if code := Run(f, []string{"-C", e.proj, "port", e.box, "8080:80"}); code != 0 {
		_, eo := outs()
		t.Fatalf("code %d: %s", code, eo)
	}
	out, errOut := outs()
	want := "box " + e.box + ": port 8080:80 added to " + trusted + "\n" +
		"box " + e.box + ": 127.0.0.1:8080 now forwards to its port 80 (no restart needed)\n"
	if out != want || errOut != "" {
		t.Errorf("out %q\nwant %q\nerr %q", out, want, errOut)
	}
	if len(*calls) != 1 || !strings.Contains(strings.Join((*calls)[0], " "), "-O forward -L 127.0.0.1:8080:127.0.0.1:80") {
		t.Errorf("ssh calls %v", *calls)
	}
	b, _ := os.ReadFile(trusted)
	if !strings.Contains(string(b), "# corral port ") || !strings.Contains(string(b), `ports = ["8080:80"]`) {
		t.Errorf("trusted layer:\n%s", b)
	}
	if a, _ := os.ReadFile(filepath.Join(e.home, "logs", "audit.jsonl")); !strings.Contains(string(a), `"key":"ports"`) || !strings.Contains(string(a), `"8080:80"`) {
		t.Errorf("audit log:\n%s", a)
	}
	// Again: in the config and forwarded already; nothing written, ssh not asked.
	if code := Run(f, []string{"-C", e.proj, "port", "8080:80"}); code != 0 {
		t.Fatal(code)
	}
	if out, _ := outs(); out != "box "+e.box+": 127.0.0.1:8080 already forwards to its port 80\n" || len(*calls) != 1 {
		t.Errorf("again: %q, %d ssh calls", out, len(*calls))
	}
	// ls and info show it.
	if code := Run(f, []string{"-C", e.proj, "info", "--json"}); code != 0 {
		t.Fatal(code)
	}
	if out, _ := outs(); !strings.Contains(out, `"ports": [`) || !strings.Contains(out, `"host": 8080`) {
		t.Errorf("info --json:\n%s", out)
	}
}

func TestPortStoppedBox(t *testing.T) {
	e, f, calls, outs := portEnv(t, false)
	if code := Run(f, []string{"-C", e.proj, "port", "3000"}); code != 0 {
		_, eo := outs()
		t.Fatalf("code %d: %s", code, eo)
	}
	out, _ := outs()
	if !strings.HasSuffix(out, "box "+e.box+" is not running: 127.0.0.1:3000 forwards to its port 3000 from its next start (corral up)\n") || len(*calls) != 0 {
		t.Errorf("out %q, ssh calls %v", out, *calls)
	}
}

func TestPortRefuses(t *testing.T) {
	e, f, calls, outs := portEnv(t, true)
	for _, tc := range []struct{ arg, want string }{
		{"80", "host port 80 is below 1024"},
		{"0", `port "0": "0" is not a port`},
		{"0.0.0.0:80:80", "the host address is always 127.0.0.1"},
		{"70000", "not a port"},
		{"3000:22x", "not a port"},
	} {
		code := Run(f, []string{"-C", e.proj, "port", tc.arg})
		_, errOut := outs()
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("port %s: code %d err %q, want %q", tc.arg, code, errOut, tc.want)
		}
	}
	if code := Run(f, []string{"-C", e.proj, "port", "3000"}); code != 0 {
		t.Fatal(code)
	}
	outs()
	code := Run(f, []string{"-C", e.proj, "port", "3001:3000"})
	if _, errOut := outs(); code == 0 || !strings.Contains(errOut, "guest port 3000 is forwarded twice") {
		t.Errorf("a second forward of guest port 3000: %d %q", code, errOut)
	}
	if len(*calls) != 1 {
		t.Errorf("ssh calls %v", *calls)
	}
}

// TestPortRequestsFollowTheHint: ports in a repository's .corral.toml are
// requests: config check lists them, the box does not forward them, and
// corral approve writes them to the trusted layer.
func TestPortRequestsFollowTheHint(t *testing.T) {
	e := setup(t, "ports = [\"5173\"]\n")
	code, out, _ := run(t, e, false, "config", "check")
	if code != 0 || !strings.Contains(out, "requests 1 host(s), group(s) or port(s)") || !strings.Contains(out, "ports 5173") {
		t.Fatalf("config check: exit %d\n%s", code, out)
	}
	code, out, _ = run(t, e, false, "config", "show", "--json")
	var shown struct {
		Config   map[string]any       `json:"config"`
		Requests []config.RepoRequest `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out), &shown); code != 0 || err != nil || shown.Config["ports"] != nil ||
		len(shown.Requests) != 1 || shown.Requests[0].Status != config.RequestPending {
		t.Fatalf("a requested port is in the effective config, or not pending beside it: %v %s", err, out)
	}
	if code, out, errOut := run(t, e, false, "approve", "--yes"); code != 0 || !strings.Contains(out, "approving ports 5173 (a guest port forwarded to the host's 127.0.0.1)") {
		t.Fatalf("approve: exit %d %q %q", code, out, errOut)
	}
	trusted, _ := os.ReadFile(filepath.Join(e.home, "projects", e.box+".toml"))
	if !strings.Contains(string(trusted), "ports = [\"5173\"]\n") || !strings.Contains(string(trusted), "# corral approve ") {
		t.Errorf("trusted layer:\n%s", trusted)
	}
	if code, out, _ := run(t, e, false, "config", "check"); code != 0 || out != "ok: box "+e.box+" config has no problems\n" {
		t.Errorf("after approving: exit %d\n%s", code, out)
	}
	if _, out, _ := run(t, e, false, "config", "show", "--json"); !strings.Contains(out, `"ports": [`) {
		t.Errorf("the approved port is not in the effective config:\n%s", out)
	}
}
