//go:build e2e

package lima

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/untrusted"
)

// TestE2ELifecycle boots a real VM from the image of packaging/linux/build-image.sh:
// create, start, shell, 9p read/write, ssh SendEnv, stop, delete.
//
//	CORRAL_E2E=1                   required
//	CORRAL_E2E_IMAGE=DIR           default /var/cache/corral/images/bookworm
//	CORRAL_E2E_DIR=DIR             default /tmp/ce2e (short: unix socket paths in LIMA_HOME must stay < 104 bytes)
//	CORRAL_E2E_USER=NAME           when root: run limactl as this user (default corral-e2e, create-test-user.sh)
//
// It does not isolate the network itself: run it inside a network namespace with only loopback.
// `make test-e2e` runs it that way after the Lima 1.2.2 smoke run, as the unprivileged test user
// (packaging/ci/e2e.sh with CORRAL_E2E_CLIENT=1); `make test-e2e-lima` runs it alone.
func TestE2ELifecycle(t *testing.T) {
	if os.Getenv("CORRAL_E2E") != "1" {
		t.Skip("set CORRAL_E2E=1 to boot a real Lima VM")
	}
	img := envOr("CORRAL_E2E_IMAGE", "/var/cache/corral/images/bookworm")
	if _, err := os.Stat(filepath.Join(img, "rootfs.qcow2")); err != nil {
		t.Skipf("no image (run packaging/linux/build-image.sh): %v", err)
	}
	base := envOr("CORRAL_E2E_DIR", "/tmp/ce2e")
	home := filepath.Join(base, "lima")
	share := filepath.Join(base, "share-"+time.Now().Format("150405"))
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = envOr("CORRAL_E2E_USER", "corral-e2e")
	}
	mkdirOwned(t, runAs, base, home, share)
	t.Cleanup(func() { _ = os.RemoveAll(share) })
	if err := os.WriteFile(filepath.Join(share, "host.txt"), []byte("from-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tmpl, err := os.ReadFile("testdata/e2e-template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl = bytes.ReplaceAll(tmpl, []byte("/var/cache/corral/images/bookworm"), []byte(img))
	tmpl = bytes.ReplaceAll(tmpl, []byte("/tmp/ce2e/share"), []byte(share))
	tmplPath := filepath.Join(base, "e2e-"+filepath.Base(share)+".yaml")
	if err := os.WriteFile(tmplPath, tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(tmplPath) })

	c := &Client{Limactl: lookLimactl(t), LimaHome: home}
	if runAs != "" {
		c.Command = runUserCommand(runAs)
	}
	if ok, why := qemu.KVMUsable(); !ok {
		t.Logf("KVM not usable (%s): TCG through the test binary as QEMU_SYSTEM_X86_64", why)
		wrapper := filepath.Join(base, "qemu-wrapper")
		copyExecutable(t, wrapper)
		c.Env = append(c.Env, "QEMU_SYSTEM_X86_64="+wrapper, "CORRAL_TEST_QEMU_WRAPPER=tcg")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if _, err := c.CheckVersion(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(ctx, tmplPath); err != nil {
		t.Fatal(err)
	}
	name := "e2e" + time.Now().Format("150405")
	if err := c.Create(ctx, name, tmplPath); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), name, true); err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
	})
	// Registered after the delete, so it runs before it: on failure, the
	// guest console and the host agent's logs, which explain most VM
	// failures (packaging/ci/e2e.sh deletes the directory after the run).
	t.Cleanup(func() {
		if t.Failed() {
			logInstanceTails(t, filepath.Join(home, name))
		}
	})
	start := time.Now()
	if err := c.Start(ctx, name, 10*time.Minute); err != nil {
		t.Fatal(err)
	}
	t.Logf("start to READY: %s", time.Since(start).Round(time.Second))

	in, err := c.Get(ctx, name)
	if err != nil || in.Status != StatusRunning || in.Config.MountType != "9p" {
		t.Fatalf("Get = %+v, %v", in, err)
	}
	st, err := ReadInstanceDir(home, name)
	if err != nil || st.Status != StatusRunning || st.DriverPID != in.DriverPID {
		t.Errorf("ReadInstanceDir = %+v, %v; list says driver %d", st, err, in.DriverPID)
	}

	out := runArgv(t, c, runAs, nil, c.ShellArgs(name, "sh", "-c", "cat /mnt/share/host.txt; echo from-guest > /mnt/share/guest.txt")...)
	if strings.TrimSpace(out) != "from-host" {
		t.Errorf("guest read %q", out)
	}
	if b, err := os.ReadFile(filepath.Join(share, "guest.txt")); err != nil || string(b) != "from-guest\n" {
		t.Errorf("host read guest.txt = %q, %v", b, err)
	}

	ssh, err := c.SSHArgs(name, SSHOptions{SendEnv: []string{"CORRAL_FWD_*"}})
	if err != nil {
		t.Fatal(err)
	}
	out = runArgv(t, c, runAs, []string{"CORRAL_FWD_E2E=delivered", "OTHER_E2E=dropped"},
		append(ssh, `echo "$CORRAL_FWD_E2E|$OTHER_E2E"`)...)
	if strings.TrimSpace(out) != "delivered|" {
		t.Errorf("SendEnv: got %q, want %q", out, "delivered|")
	}

	stop := time.Now()
	if err := c.Stop(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	t.Logf("stop: %s", time.Since(stop).Round(100*time.Millisecond))
	if st, err := ReadInstanceDir(home, name); err != nil || st.Status != StatusStopped {
		t.Errorf("after stop: ReadInstanceDir = %+v, %v", st, err)
	}
	if err := c.Delete(ctx, name, false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, name); !errors.Is(err, ErrNotFound) {
		t.Errorf("after delete: Get err = %v, want ErrNotFound", err)
	}
}

// logInstanceTails logs the last lines of the console and host-agent logs
// in an instance directory, escaped for display (the guest writes the
// console log).
func logInstanceTails(t *testing.T, dir string) {
	t.Helper()
	serial, _ := filepath.Glob(filepath.Join(dir, "serial*.log"))
	for _, p := range append(serial, filepath.Join(dir, "ha.stdout.log"), filepath.Join(dir, "ha.stderr.log")) {
		b, err := untrusted.ReadTail(p, 64<<10)
		if err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		lines = lines[max(0, len(lines)-60):]
		for i, l := range lines {
			lines[i] = display.Text(strings.TrimRight(l, "\r"), 400)
		}
		t.Logf("%s (last %d lines):\n%s", p, len(lines), strings.Join(lines, "\n"))
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func lookLimactl(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("limactl")
	if err != nil {
		t.Skipf("limactl not installed (run packaging/linux/setup-lima.sh): %v", err)
	}
	return p
}

// runUserCommand runs every command as user (root cannot run limactl). runuser keeps the environment.
func runUserCommand(u string) CommandFunc {
	return func(ctx context.Context, name string, arg ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "runuser", append([]string{"-u", u, "--", name}, arg...)...)
		cmd.Dir = "/" // the user may not be able to enter the test's cwd
		return cmd
	}
}

func mkdirOwned(t *testing.T, owner string, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if owner == "" {
			continue
		}
		u, err := user.Lookup(owner)
		if err != nil {
			t.Skipf("user %s (packaging/linux/create-test-user.sh): %v", owner, err)
		}
		if out, err := exec.Command("chown", u.Uid+":"+u.Gid, d).CombinedOutput(); err != nil {
			t.Fatalf("chown %s: %v %s", d, err, out)
		}
	}
}

// copyExecutable copies the test binary to dst (mode 0755) so the limactl user can run it.
func copyExecutable(t *testing.T, dst string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_ = os.Remove(dst)
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// runArgv runs argv (as runAs when set) in dir / and returns stdout.
func runArgv(t *testing.T, c *Client, runAs string, env []string, argv ...string) string {
	t.Helper()
	if runAs != "" {
		argv = append([]string{"runuser", "-u", runAs, "--"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = "/"
	cmd.Env = append(append(os.Environ(), "LIMA_HOME="+c.LimaHome), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%q: %v\n%s", argv, err, stderr.String())
	}
	return string(out)
}
