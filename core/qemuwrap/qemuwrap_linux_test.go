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
	"github.com/corral-dev/corral/core/namerule"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
)

// TestMain lets the test binary be corral's qemu shim: started through a
// link named qemu-system-<arch> it runs Main, as the corral binary does.
func TestMain(m *testing.M) {
	if Is(os.Args[0]) {
		os.Exit(Main(os.Args))
	}
	// The name rule's supervisor, which Main's stage starts from this
	// binary (cmd/corral/main.go dispatches it the same way).
	if len(os.Args) > 1 && os.Args[1] == namerule.Command {
		os.Exit(NameRuleMain(os.Args[2:]))
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
	// The project exported as Lima exports it (9p): the name rule's root.
	cmd := exec.Command(shim, "-machine", "q35", "-nographic", "-monitor", "none", "-serial", "none", "-S", "-pidfile", pidFile,
		"-virtfs", "local,mount_tag=m0,path="+proj+",security_model=none")
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
	// The name rule: qemu runs under the filter (one, with a listener),
	// and the supervisor beside it is its child, outside the filter.
	st, _ := os.ReadFile("/proc/" + pid + "/status")
	if !strings.Contains(string(st), "Seccomp:\t2") || !strings.Contains(string(st), "NoNewPrivs:\t1") {
		t.Errorf("qemu is not under the name rule's filter:\n%s", st)
	}
	// namerule.Verify finds the supervisor among qemu's children and
	// checks it runs outside any filter.
	sup := ""
	if n, _ := strconv.Atoi(pid); n > 0 {
		if got, err := namerule.Verify(n); err != nil {
			t.Errorf("namerule.Verify(%s): %v", pid, err)
		} else {
			sup = strconv.Itoa(got)
		}
	}
	if sup == "" {
		t.Errorf("no name rule supervisor beside qemu; stderr:\n%s", stderr.String())
	} else if sst, _ := os.ReadFile("/proc/" + sup + "/status"); !strings.Contains(string(sst), "Seccomp:\t0") {
		t.Errorf("the supervisor is under a filter:\n%s", sst)
	}
	for _, want := range []string{"read-only for qemu: " + filepath.Join(proj, ".git"), "no .git can be made in " + proj} {
		for !strings.Contains(stderr.String(), want) {
			if time.Now().After(deadline) {
				t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// qemu gone, the supervisor goes too (the listener reports POLLHUP).
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	for sup != "" {
		if _, err := os.Stat("/proc/" + sup); err != nil {
			break
		}
		if b, _ := os.ReadFile("/proc/" + sup + "/stat"); strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the supervisor %s outlived qemu", sup)
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
