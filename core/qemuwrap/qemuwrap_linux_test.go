package qemuwrap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
)

// TestMain lets the test binary be corral's qemu shim: started through a
// link named qemu-system-<arch> it runs Main, as the corral binary does.
func TestMain(m *testing.M) {
	if Is(os.Args[0]) {
		os.Exit(Main(os.Args))
	}
	os.Exit(m.Run())
}

// TestQemuShimNamespace starts the real qemu through the shim for a box of
// a git project, the way Lima's host agent does, but with no machine to
// boot (-machine none): the PID Lima started is the one in qemu's pid file
// and the one running qemu, qemu's mount namespace has the project's .git
// read-only, and qemu holds no capabilities (for a non-root user).
func TestQemuShimNamespace(t *testing.T) {
	if _, err := qemu.FindQemu(""); err != nil {
		t.Skip("no qemu:", err)
	}
	if err := qemu.CheckNamespaces(); err != nil {
		t.Skip("no user namespaces:", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	l := paths.Layout{Home: filepath.Join(dir, "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: "g-1", Project: proj, Network: "full", VMType: "qemu"}); err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(l.LimaHome(), "g-1")
	if err := os.MkdirAll(inst, 0o700); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	arch, _ := qemu.QemuArch("")
	shim := filepath.Join(dir, ShimName+arch)
	if err := os.Symlink(self, shim); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(inst, "qemu.pid")
	cmd := exec.Command(shim, "-machine", "none", "-nographic", "-monitor", "none", "-serial", "none", "-S", "-pidfile", pidFile)
	cmd.Env = append(os.Environ(), paths.EnvHome+"="+l.Home)
	// os/exec copies stderr in a goroutine of its own: a locked buffer,
	// read by polling (the line may arrive after qemu's pid file).
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(pidFile)
		if strings.TrimSpace(string(b)) != "" {
			if got := strings.TrimSpace(string(b)); got != pid {
				t.Fatalf("qemu.pid = %s, Lima started %s", got, pid)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("qemu never wrote its pid file; stderr:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	exe, _ := os.Readlink("/proc/" + pid + "/exe")
	if !strings.Contains(filepath.Base(exe), "qemu-system") || exe == self {
		t.Errorf("pid %s runs %s, not the real qemu", pid, exe)
	}
	mi, err := os.ReadFile("/proc/" + pid + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	ro := false
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[4] == filepath.Join(proj, ".git") && strings.HasPrefix(f[5], "ro") {
			ro = true
		}
	}
	if !ro {
		t.Errorf("no read-only .git in qemu's mount namespace; stderr:\n%s", stderr.String())
	}
	if os.Getuid() != 0 {
		st, _ := os.ReadFile("/proc/" + pid + "/status")
		if !strings.Contains(string(st), "CapEff:\t0000000000000000") {
			t.Errorf("qemu has capabilities:\n%s", st)
		}
	}
	want := "read-only for qemu: " + filepath.Join(proj, ".git")
	for !strings.Contains(stderr.String(), want) {
		if time.Now().After(deadline) {
			t.Errorf("stderr does not say what is read-only:\n%s", stderr.String())
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedBuffer is a strings.Builder safe for one writer goroutine and a
// reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
