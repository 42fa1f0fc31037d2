package box

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
)

// TestSSHMasterAgainstARealSSHD runs corral's ssh master against a real
// sshd (AcceptEnv CORRAL_FWD_*) on 127.0.0.1: CORRAL_TEST_LIMA_HOME names
// a LIMA_HOME whose instance "bx" has an ssh.config for it. Skipped
// without one (the e2e suite covers the same on a real box).
func TestSSHMasterAgainstARealSSHD(t *testing.T) {
	lh := os.Getenv("CORRAL_TEST_LIMA_HOME")
	if lh == "" {
		t.Skip("set CORRAL_TEST_LIMA_HOME to a LIMA_HOME with an instance bx served by a local sshd")
	}
	home := t.TempDir()
	l := paths.Layout{Home: home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	s := &Service{Layout: l, Logger: discard(), Now: time.Now, Lima: &lima.Client{LimaHome: lh}}
	ctx := context.Background()
	sock, err := s.EnsureMaster(ctx, "bx")
	if err != nil {
		t.Fatal(err)
	}
	pid := masterPIDFor(t, lh, sock)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)); err != nil || strings.Contains(string(b), "CORRAL_FWD_") || strings.Contains(string(b), "HOST_SECRET") {
		t.Errorf("master environment: %v %q", err, b)
	}
	// Two concurrent sessions over the master, each with its own value.
	vals := []string{"value-a", "value-b"}
	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i, v := range vals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			argv, _ := s.Lima.SSHArgs("bx", lima.SSHOptions{SendEnv: []string{SendEnvPattern}, ControlPath: sock})
			argv = append(argv, "-T", "sleep 1; echo $CORRAL_FWD_X; echo ${HOST_SECRET:-unset}")
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Env = append(os.Environ(), "CORRAL_FWD_X="+v, "HOST_SECRET=leak")
			b, err := cmd.CombinedOutput()
			outs[i] = strings.TrimSpace(string(b))
			if err != nil {
				outs[i] += " " + err.Error()
			}
		}()
	}
	wg.Wait()
	for i, v := range vals {
		if outs[i] != v+"\nunset" {
			t.Errorf("session %d: %q", i, outs[i])
		}
	}
	if got := masterPIDFor(t, lh, sock); got != pid {
		t.Errorf("sessions did not share the master: %d then %d", pid, got)
	}
	// Concurrent EnsureMaster calls after the master died start one.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	var socks [3]string
	for i := range socks {
		wg.Add(1)
		go func() { defer wg.Done(); socks[i], _ = s.EnsureMaster(ctx, "bx") }()
	}
	wg.Wait()
	pid2 := masterPIDFor(t, lh, sock)
	if pid2 == 0 || pid2 == pid || socks[0] != sock || socks[1] != sock || socks[2] != sock {
		t.Errorf("after the master died: pid %d (was %d), sockets %q", pid2, pid, socks)
	}
	out, _ := exec.Command("pgrep", "-c", "-f", "ControlPath="+sock).Output()
	if strings.TrimSpace(string(out)) != "1" {
		t.Errorf("%s masters on %s", strings.TrimSpace(string(out)), sock)
	}
	s.CloseMaster(ctx, "bx")
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("socket after close: %v", err)
	}
	for i := 0; i < 20 && syscall.Kill(pid2, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if syscall.Kill(pid2, 0) == nil {
		t.Errorf("master %d outlived CloseMaster", pid2)
	}
}

func masterPIDFor(t *testing.T, lh, sock string) int {
	t.Helper()
	out, _ := exec.Command("ssh", "-F", filepath.Join(lh, "bx", "ssh.config"), "-o", "ControlPath="+sock, "-O", "check", "lima-bx").CombinedOutput()
	var pid int
	if i := strings.Index(string(out), "pid="); i >= 0 {
		fmt.Sscanf(string(out)[i:], "pid=%d", &pid)
	}
	return pid
}
