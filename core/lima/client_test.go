package lima

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestMain doubles as the fake limactl: with CORRAL_FAKE_LIMACTL=1 the test binary prints the canned
// stdout/stderr and exits with the canned code (the os/exec helper-process pattern).
//
// With CORRAL_TEST_QEMU_WRAPPER=tcg it is the QEMU_SYSTEM_X86_64 wrapper of the e2e test (see e2e_test.go).
func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_TEST_QEMU_WRAPPER") == "tcg" {
		os.Exit(qemuWrapperMain(os.Args[1:]))
	}
	if os.Getenv("CORRAL_FAKE_LIMACTL") == "1" {
		fmt.Fprint(os.Stdout, os.Getenv("FAKE_STDOUT"))
		fmt.Fprint(os.Stderr, os.Getenv("FAKE_STDERR"))
		code, _ := strconv.Atoi(os.Getenv("FAKE_EXIT"))
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// fakeExec records argv and env of each run and answers with canned output.
type fakeExec struct {
	calls  [][]string
	stdout string
	stderr string
	exit   int
	home   string // LIMA_HOME; "" means /tmp/lh (nothing there)
}

// limaHomeWith makes a LIMA_HOME holding instances with just a lima.yaml.
func limaHomeWith(t *testing.T, names ...string) string {
	t.Helper()
	home := t.TempDir()
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(home, n), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, n, "lima.yaml"), []byte("vmType: qemu\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func (f *fakeExec) command(ctx context.Context, name string, arg ...string) *exec.Cmd {
	f.calls = append(f.calls, append([]string{name}, arg...))
	// run() sets the env after this returns; the canned answer travels in Client.Env (see client).
	return exec.CommandContext(ctx, os.Args[0])
}

// client returns a Client whose limactl is the test binary itself answering with f's canned output.
func (f *fakeExec) client() *Client {
	home := f.home
	if home == "" {
		home = "/tmp/lh"
	}
	return &Client{
		Limactl:  "/opt/lima/bin/limactl",
		LimaHome: home,
		Env: []string{
			"CORRAL_FAKE_LIMACTL=1",
			"FAKE_STDOUT=" + f.stdout,
			"FAKE_STDERR=" + f.stderr,
			"FAKE_EXIT=" + strconv.Itoa(f.exit),
			"QEMU_SYSTEM_X86_64=/opt/corral/qemu",
		},
		Command: f.command,
	}
}

func TestArgv(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		call func(c *Client) error
		want []string
	}{
		{"version", func(c *Client) error { _, err := c.Version(ctx); return err }, []string{"--version"}},
		{"list", func(c *Client) error { _, err := c.List(ctx); return err }, []string{"list", "--format", "{{json .}}"}},
		{"create", func(c *Client) error { return c.Create(ctx, "box1", "/t/box.yaml") },
			[]string{"create", "--tty=false", "--name", "box1", "/t/box.yaml"}},
		{"start", func(c *Client) error { return c.Start(ctx, "box1", 0) }, []string{"start", "--tty=false", "box1"}},
		{"start timeout", func(c *Client) error { return c.Start(ctx, "box1", 5*time.Minute) },
			[]string{"start", "--tty=false", "--timeout", "5m0s", "box1"}},
		{"stop", func(c *Client) error { return c.Stop(ctx, "box1", false) }, []string{"stop", "box1"}},
		{"stop force", func(c *Client) error { return c.Stop(ctx, "box1", true) }, []string{"stop", "--force", "box1"}},
		{"delete", func(c *Client) error { return c.Delete(ctx, "box1", false) }, []string{"delete", "box1"}},
		{"delete force", func(c *Client) error { return c.Delete(ctx, "box1", true) }, []string{"delete", "--force", "box1"}},
		{"clone", func(c *Client) error { return c.Clone(ctx, "box1", "box2") }, []string{"clone", "--tty=false", "box1", "box2"}},
		{"snapshot create", func(c *Client) error { return c.SnapshotCreate(ctx, "box1", "s1") },
			[]string{"snapshot", "create", "--tag", "s1", "box1"}},
		{"snapshot apply", func(c *Client) error { return c.SnapshotApply(ctx, "box1", "s1") },
			[]string{"snapshot", "apply", "--tag", "s1", "box1"}},
		{"snapshot delete", func(c *Client) error { return c.SnapshotDelete(ctx, "box1", "s1") },
			[]string{"snapshot", "delete", "--tag", "s1", "box1"}},
		{"snapshot list", func(c *Client) error { _, err := c.SnapshotList(ctx, "box1"); return err },
			[]string{"snapshot", "list", "--quiet", "box1"}},
		{"validate", func(c *Client) error { return c.Validate(ctx, "/t/box.yaml") }, []string{"validate", "/t/box.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeExec{stdout: "limactl version 1.2.2\n", home: limaHomeWith(t, "box1")}
			if tt.name != "version" {
				f.stdout = ""
			}
			if err := tt.call(f.client()); err != nil {
				t.Fatal(err)
			}
			want := append([]string{"/opt/lima/bin/limactl"}, tt.want...)
			if len(f.calls) != 1 || !slices.Equal(f.calls[0], want) {
				t.Errorf("argv = %q, want %q", f.calls, want)
			}
		})
	}
}

func TestInvalidNamesNeverRun(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"", "../x", "a/b", "_config", "-f", ".."} {
		f := &fakeExec{}
		c := f.client()
		errs := []error{
			c.Start(ctx, name, 0), c.Stop(ctx, name, true), c.Delete(ctx, name, true),
			c.Create(ctx, name, "/t.yaml"), c.Clone(ctx, "ok", name), c.SnapshotCreate(ctx, name, "t"),
		}
		_, err := c.Get(ctx, name)
		errs = append(errs, err)
		_, err = c.SSHArgs(name, SSHOptions{})
		errs = append(errs, err)
		for i, err := range errs {
			if err == nil {
				t.Errorf("name %q call %d: no error", name, i)
			}
		}
		if len(f.calls) != 0 {
			t.Errorf("name %q: limactl ran: %q", name, f.calls)
		}
	}
}

func TestEnvPassesLimaHomeAndExtras(t *testing.T) {
	// Run the real exec path against a shell script that prints its environment.
	dir := t.TempDir()
	script := filepath.Join(dir, "limactl")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$LIMA_HOME|$QEMU_SYSTEM_X86_64|$*\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Client{Limactl: script, LimaHome: "/tmp/lh", Env: []string{"QEMU_SYSTEM_X86_64=/w/qemu"}}
	res, err := c.run(context.Background(), nil, "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(res.stdout)), "/tmp/lh|/w/qemu|list --json"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSSHArgs(t *testing.T) {
	c := &Client{LimaHome: "/tmp/ce2e/lima"}
	got, err := c.SSHArgs("box1", SSHOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"ssh", "-F", "/tmp/ce2e/lima/box1/ssh.config", "lima-box1"}; !slices.Equal(got, want) {
		t.Errorf("SSHArgs = %q, want %q", got, want)
	}
	got, err = c.SSHArgs("box1", SSHOptions{SendEnv: []string{"CORRAL_FWD_*"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ssh", "-F", "/tmp/ce2e/lima/box1/ssh.config", "-o", "ControlMaster=no", "-o", "ControlPath=none",
		"-o", "SendEnv=CORRAL_FWD_*", "lima-box1"}
	if !slices.Equal(got, want) {
		t.Errorf("SSHArgs(SendEnv) = %q, want %q", got, want)
	}
	got, _ = c.SSHArgs("box1", SSHOptions{SendEnv: []string{"CORRAL_FWD_*"}, ControlPath: "/h/run/ssh/box1.sock"})
	want = []string{"ssh", "-F", "/tmp/ce2e/lima/box1/ssh.config", "-o", "ControlMaster=no", "-o", "ControlPath=/h/run/ssh/box1.sock",
		"-o", "SendEnv=CORRAL_FWD_*", "lima-box1"}
	if !slices.Equal(got, want) {
		t.Errorf("SSHArgs(ControlPath) = %q, want %q", got, want)
	}
	got, _ = (&Client{Env: []string{"LIMA_HOME=/from/client/env"}}).SSHArgs("b", SSHOptions{})
	if got[2] != "/from/client/env/b/ssh.config" {
		t.Errorf("SSHArgs with LIMA_HOME in Client.Env = %q", got)
	}
	t.Setenv("LIMA_HOME", "/from/env")
	got, _ = (&Client{}).SSHArgs("b", SSHOptions{NoMultiplex: true})
	if want := []string{"ssh", "-F", "/from/env/b/ssh.config", "-o", "ControlMaster=no", "-o", "ControlPath=none", "lima-b"}; !slices.Equal(got, want) {
		t.Errorf("SSHArgs from env = %q, want %q", got, want)
	}
}

func TestShellArgs(t *testing.T) {
	c := &Client{Limactl: "/l/limactl"}
	got := c.ShellArgs("box1", "uname", "-a")
	if want := []string{"/l/limactl", "shell", "--workdir", "/", "box1", "uname", "-a"}; !slices.Equal(got, want) {
		t.Errorf("ShellArgs = %q, want %q", got, want)
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	f := &fakeExec{
		stderr: `time="2026-11-30T06:00:00Z" level=warning msg="something harmless"` + "\n" +
			`time="2026-11-30T06:00:00Z" level=fatal msg="instance \"nope\" not found"` + "\n",
		exit: 1,
	}
	err := f.client().Stop(ctx, "nope", false)
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	if le.ExitCode != 1 || le.Stderr != `instance "nope" not found` {
		t.Errorf("Error = %+v", le)
	}
	if !slices.Equal(le.Argv, []string{"/opt/lima/bin/limactl", "stop", "nope"}) {
		t.Errorf("Argv = %q", le.Argv)
	}
	if want := `stopping lima instance "nope": /opt/lima/bin/limactl stop nope: exit status 1: instance "nope" not found`; err.Error() != want {
		t.Errorf("Error() =\n %s\nwant\n %s", err, want)
	}

	// Not installed: a name not on PATH, and a path that does not exist.
	t.Setenv("PATH", t.TempDir())
	for _, bin := range []string{"limactl", filepath.Join(t.TempDir(), "limactl")} {
		c := &Client{Limactl: bin}
		_, err := c.Version(ctx)
		if !errors.Is(err, ErrNotInstalled) {
			t.Errorf("%s: err = %v, want ErrNotInstalled", bin, err)
		}
		if !errors.As(err, &le) || le.Hint() == "" {
			t.Errorf("%s: no hint on %v", bin, err)
		}
	}
}

func TestStartUnknownNeverRuns(t *testing.T) {
	// `limactl start NAME` would create NAME from Lima's default template.
	f := &fakeExec{home: limaHomeWith(t, "other")}
	err := f.client().Start(context.Background(), "nope", time.Minute)
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	if len(f.calls) != 0 {
		t.Errorf("limactl ran: %q", f.calls)
	}
}

func TestGetNotFound(t *testing.T) {
	// Real 1.2.2: exit 1 with only a warning.
	f := &fakeExec{stderr: `time="x" level=warning msg="No instance matching nope found."` + "\n", exit: 1}
	_, err := f.client().Get(context.Background(), "nope")
	var le *Error
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &le) || le.Stderr != "No instance matching nope found." {
		t.Errorf("err = %v, want ErrNotFound with the warning as Stderr", err)
	}
}

func TestGetNotFoundLima2(t *testing.T) {
	// Real 2.2.0 (captured): the warning, then a fatal "unmatched instances", exit 1.
	f := &fakeExec{stderr: `time="2026-12-01T15:16:58Z" level=warning msg="No instance matching nope found."` + "\n" +
		`time="2026-12-01T15:16:58Z" level=fatal msg="unmatched instances"` + "\n", exit: 1}
	_, err := f.client().Get(context.Background(), "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
}

func TestGetNotFoundWhenListIsEmpty(t *testing.T) {
	f := &fakeExec{stderr: `time="x" level=warning msg="No instance matching nope found."`}
	_, err := f.client().Get(context.Background(), "nope")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	if want := []string{"/opt/lima/bin/limactl", "list", "--format", "{{json .}}", "nope"}; !slices.Equal(f.calls[0], want) {
		t.Errorf("argv = %q", f.calls[0])
	}
}

func TestContextCancel(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "limactl")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := (&Client{Limactl: script, LimaHome: limaHomeWith(t, "box1")}).Start(ctx, "box1", 0)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want DeadlineExceeded", err)
	}
}

func TestRefuseRoot(t *testing.T) {
	if err := refuseRoot(1000); err != nil {
		t.Errorf("refuseRoot(1000) = %v", err)
	}
	err := refuseRoot(0)
	if !errors.Is(err, ErrRoot) {
		t.Fatalf("refuseRoot(0) = %v, want ErrRoot", err)
	}
	var h interface{ Hint() string }
	if !errors.As(err, &h) || !strings.Contains(h.Hint(), "unprivileged") {
		t.Errorf("no hint on %v", err)
	}
}
