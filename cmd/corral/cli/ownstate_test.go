package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/untrusted/untrustedtest"
)

// cmdBound is how long a command may take against a bad state file: it
// must fail or succeed at once, never block on a FIFO or read /dev/zero.
const cmdBound = 20 * time.Second

// ownStateEnv is a project whose broker-mode box exists and runs (its
// metadata, a Lima instance directory with live pid files), over the fake
// limactl, in a short home (unix sockets must fit sun_path).
func ownStateEnv(t *testing.T) (env, paths.Layout) {
	t.Helper()
	e := setup(t, "")
	home, err := os.MkdirTemp("/tmp", "cos")
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
	if err := boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, Network: config.NetworkBroker, BrokerPort: 42001, VMType: "qemu", IdleStop: "30m", LastActivity: time.Now()}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(l.LimaHome(), e.box)
	pid := strconv.Itoa(os.Getpid()) + "\n"
	for name, content := range map[string]string{"lima.yaml": "vmType: qemu\n", "ha.pid": pid, "qemu.pid": pid} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return e, l
}

// runFull runs a command the way Main does (the sweep included: an
// Executable is set) over the fake limactl, and fails the test if it has
// not ended within cmdBound.
func runFull(t *testing.T, e env, l paths.Layout, args ...string) (int, string, string) {
	t.Helper()
	ios, _, out, errOut := Test(false)
	f := &Factory{
		IO:         ios,
		Layout:     func() (paths.Layout, error) { return l, nil },
		Platform:   config.Platform{OS: "linux", Arch: "amd64"},
		LookupEnv:  func(string) (string, bool) { return "", false },
		Executable: func() (string, error) { return "/bin/false", nil },
		Geteuid:    func() int { return 1000 }, // the sweep runs as root in no case
		NewService: func() (*box.Service, error) {
			s, _ := boxtest.Service(l, time.Now(), audit.ActorCLI)
			return s, nil
		},
	}
	done := make(chan int, 1)
	go func() { done <- Run(f, append([]string{"-C", e.proj}, args...)) }()
	select {
	case code := <-done:
		return code, out.String(), errOut.String()
	case <-time.After(cmdBound):
		t.Fatalf("corral %s: still running after %s", strings.Join(args, " "), cmdBound)
		return 0, "", ""
	}
}

// A broken metadata file of another box never stops a command: the
// commands that sweep warn once and carry on; version, help, config and
// render do not look at boxes at all.
func TestBrokenBoxFileSkipped(t *testing.T) {
	const other = "zz-000000"
	for _, kind := range untrustedtest.All {
		t.Run(string(kind), func(t *testing.T) {
			e, l := ownStateEnv(t)
			untrustedtest.Make(t, l.BoxMeta(other), kind)
			for _, c := range []struct {
				args  []string
				warns int
			}{
				{[]string{"version"}, 0},
				{[]string{"help"}, 0},
				{[]string{"config", "show"}, 0},
				{[]string{"config", "check"}, 0},
				{[]string{"render"}, 0},
				{[]string{"ls"}, 1},
				{[]string{"info"}, 1},
				{[]string{"allow", "--list", e.box}, 1},
				{[]string{"allow", e.box, "api.example.test"}, 1},
				{[]string{"stop"}, 1},
			} {
				code, out, errOut := runFull(t, e, l, c.args...)
				if code != 0 {
					t.Errorf("%v: exit %d\n%s", c.args, code, errOut)
				}
				if n := strings.Count(errOut, "warning: skipping box "+other+": "); n != c.warns {
					t.Errorf("%v: %d warnings about %s, want %d:\n%s", c.args, n, other, c.warns, errOut)
				}
				if c.warns > 0 && (!strings.Contains(errOut, l.BoxMeta(other)) || !strings.Contains(errOut, "hint: ")) {
					t.Errorf("%v: the warning does not name %s with a hint:\n%s", c.args, l.BoxMeta(other), errOut)
				}
				if c.args[0] == "ls" && !strings.Contains(out, e.box) {
					t.Errorf("ls lost the good box:\n%s", out)
				}
			}
		})
	}
}

// Every bad state file, through the commands that read it: each ends at
// once, and one that must fail says which file and what to do.
func TestBadStateFiles(t *testing.T) {
	type stateFile struct {
		name string
		path func(env, paths.Layout) string
		// cmds read the file; fail: they must exit non-zero naming it.
		cmds func(env) [][]string
		fail bool
	}
	for _, sf := range []stateFile{
		{"box metadata", func(e env, l paths.Layout) string { return l.BoxMeta(e.box) },
			func(e env) [][]string {
				return [][]string{{"info"}, {"allow", e.box, "api.example.test"}, {"port", e.box, "8080:80"}, {"stop"}}
			}, true},
		{"approvals", func(e env, l paths.Layout) string { return approval.Path(l, e.box) },
			func(e env) [][]string {
				return [][]string{{"allow", "--list", e.box}, {"allow", e.box, "api.example.test"}}
			}, true},
		{"audit log", func(e env, l paths.Layout) string { return l.AuditLog() },
			func(e env) [][]string { return [][]string{{"allow", e.box, "api.example.test"}} }, true},
		{"lima.yaml", func(e env, l paths.Layout) string { return filepath.Join(l.LimaHome(), e.box, "lima.yaml") },
			func(e env) [][]string { return [][]string{{"info"}, {"ls"}} }, false},
		{"ha.pid", func(e env, l paths.Layout) string { return filepath.Join(l.LimaHome(), e.box, "ha.pid") },
			func(e env) [][]string { return [][]string{{"info"}, {"ls"}, {"version"}} }, false},
		{"recent projects", func(e env, l paths.Layout) string { return l.RecentProjects() },
			func(e env) [][]string { return [][]string{{"ls"}, {"info"}} }, false},
		{"hosts file", func(e env, l paths.Layout) string { return l.HostsFile() },
			func(e env) [][]string {
				return [][]string{{"host", "ls"}, {"host", "add", "gpu", "ssh://gpu.example.test"}, {"host", "rm", "gpu"}}
			}, true},
	} {
		for _, kind := range untrustedtest.All {
			t.Run(sf.name+"/"+string(kind), func(t *testing.T) {
				e, l := ownStateEnv(t)
				path := sf.path(e, l)
				untrustedtest.Make(t, path, kind)
				for _, args := range sf.cmds(e) {
					code, _, errOut := runFull(t, e, l, args...)
					if len(errOut) > 8<<10 {
						t.Errorf("%v: %d bytes on stderr", args, len(errOut))
					}
					// An audit log that is a regular file is appended to
					// (and rotated), whatever its content.
					if !sf.fail || (sf.name == "audit log" && !slices.Contains(untrustedtest.Special, kind)) {
						continue
					}
					if code == 0 || !strings.Contains(errOut, path) || !strings.Contains(errOut, "hint: ") && sf.name != "audit log" ||
						sf.name == "box metadata" && !strings.HasSuffix(errOut, "hint: corral writes this file: move it away or delete it; corral rm -f "+e.box+" removes the box\n") {
						t.Errorf("%v: exit %d, want an error naming %s with a hint:\n%s", args, code, path, errOut)
					}
				}
			})
		}
	}
}

// `corral allow` against a FIFO audit log fails at once and does not keep
// the approvals lock: the next allow, once the FIFO is gone, succeeds.
func TestAllowAfterFIFOAuditLog(t *testing.T) {
	e, l := ownStateEnv(t)
	untrustedtest.Make(t, l.AuditLog(), untrustedtest.FIFO)
	if code, _, errOut := runFull(t, e, l, "allow", e.box, "api.example.test"); code == 0 || !strings.Contains(errOut, l.AuditLog()) {
		t.Fatalf("allow with a FIFO audit log: exit %d\n%s", code, errOut)
	}
	if err := os.Remove(l.AuditLog()); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runFull(t, e, l, "allow", e.box, "api.example.test"); code != 0 {
		t.Fatalf("allow after: exit %d\n%s%s", code, out, errOut)
	}
}

// Concurrent `corral allow` writers lose no approval.
func TestConcurrentAllowLosesNothing(t *testing.T) {
	e, l := ownStateEnv(t)
	const n = 24
	codes := make(chan string, n)
	for i := range n {
		go func() {
			ios, _, _, errOut := Test(false)
			f := &Factory{IO: ios, Layout: func() (paths.Layout, error) { return l, nil }, Platform: config.Platform{OS: "linux", Arch: "amd64"},
				LookupEnv: func(string) (string, bool) { return "", false }}
			if code := Run(f, []string{"-C", e.proj, "allow", e.box, "h" + strconv.Itoa(i) + ".example.test"}); code != 0 {
				codes <- errOut.String()
				return
			}
			codes <- ""
		}()
	}
	deadline := time.After(cmdBound)
	for range n {
		select {
		case msg := <-codes:
			if msg != "" {
				t.Error(msg)
			}
		case <-deadline:
			t.Fatal("allow writers still running")
		}
	}
	s, err := approval.Open(l, e.box)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Active(time.Now())
	if err != nil || len(got) != n {
		t.Fatalf("%d approvals after %d concurrent allows (%v)", len(got), n, err)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: e.box})
	if err != nil || len(evs) != n {
		t.Fatalf("%d audit records after %d allows (%v)", len(evs), n, err)
	}
}

// `corral broker --log` refuses a special file before it listens.
func TestBrokerLogSpecialFile(t *testing.T) {
	for _, kind := range untrustedtest.Special {
		t.Run(string(kind), func(t *testing.T) {
			e, l := ownStateEnv(t)
			path := filepath.Join(l.Home, "decisions.jsonl")
			untrustedtest.Make(t, path, kind)
			code, _, errOut := runFull(t, e, l, "broker", "--listen", "127.0.0.1:0", "--allow", "api.example.test", "--log", path)
			if code == 0 || !strings.Contains(errOut, path) {
				t.Fatalf("exit %d, want an error naming %s:\n%s", code, path, errOut)
			}
		})
	}
}
