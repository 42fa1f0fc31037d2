//go:build e2e

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// masterSock is corral's control socket of the box's ssh master.
func (x *h) masterSock() string { return filepath.Join(x.home, "run", "ssh", x.box+".sock") }

// masterPID asks the master on corral's control socket for its pid
// (ssh -O check); 0 when none answers.
func (x *h) masterPID() int {
	return sshMasterPID(filepath.Join(x.home, "lima", x.box, "ssh.config"), x.masterSock(), x.box)
}

// sessionsThroughMaster: sessions run over corral's own ssh master, which
// holds no session variable; two concurrent sessions with different values
// each see only their own; a killed master is replaced by the next session.
// About 15 s on the shared running box.
func sessionsThroughMaster(t *testing.T, x *h) {
	x.ok("run", "--", "true")
	st, err := os.Stat(filepath.Dir(x.masterSock()))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("control socket directory: %v %v", st, err)
	}
	if n := len(x.masterSock()); n > 103 {
		t.Errorf("control socket path is %d bytes", n)
	}
	pid := x.masterPID()
	if pid == 0 {
		t.Fatalf("no ssh master answers on %s", x.masterSock())
	}

	// Two sessions at once, each with its own value; each sleeps so that
	// both are open on the master at the same time.
	vals := []string{
		fmt.Sprintf("e2e-mux-a-%d", time.Now().UnixNano()),
		fmt.Sprintf("e2e-mux-b-%d", time.Now().UnixNano()),
	}
	outs := make([]string, len(vals))
	var wg sync.WaitGroup
	for i, v := range vals {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(x.bin, "-C", x.project, "run", "--", "sh", "-c", `sleep 3; echo "$E2E_SECRET"`)
			cmd.Env = append(append([]string{}, x.env...), "E2E_SECRET="+v)
			b, err := cmd.CombinedOutput()
			outs[i] = strings.TrimSpace(string(b))
			if err != nil {
				outs[i] += " (" + err.Error() + ")"
			}
		}()
	}
	// While both run: the master's environment and argv hold neither value.
	time.Sleep(1500 * time.Millisecond)
	for _, f := range []string{"environ", "cmdline"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
		if err != nil {
			t.Errorf("reading the master's %s: %v", f, err)
		}
		for _, v := range vals {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("the master's %s holds a session value", f)
			}
		}
		if bytes.Contains(b, []byte("CORRAL_FWD_")) && f == "environ" {
			t.Errorf("the master's environment has a CORRAL_FWD_ variable")
		}
	}
	wg.Wait()
	for i, v := range vals {
		if outs[i] != v {
			t.Errorf("session %d printed %q, want its own value %q", i, outs[i], v)
		}
	}
	if got := x.masterPID(); got != pid {
		t.Errorf("master pid changed from %d to %d between sessions", pid, got)
	}

	// A dead master is replaced by the next session.
	must(t, syscall.Kill(pid, syscall.SIGKILL))
	time.Sleep(200 * time.Millisecond)
	if got := x.ok("run", "--", "sh", "-c", `echo "$E2E_SECRET"`); got != "\n" {
		t.Errorf("session after the master died printed %q", got)
	}
	if got := x.masterPID(); got == 0 || got == pid {
		t.Errorf("master not replaced: pid %d (was %d)", got, pid)
	}
}
