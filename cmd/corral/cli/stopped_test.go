package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
)

// stoppedAuditEnv makes TestStoppedAuditHelper append to the audit log at
// its value for ever, holding the log's shared lease most of the time.
const stoppedAuditEnv = "CORRAL_CLI_TEST_STOPPED_AUDIT"

// TestStoppedAuditHelper is the process TestCommandsPastStoppedWriter
// stops; it does nothing unless stoppedAuditEnv is set.
func TestStoppedAuditHelper(t *testing.T) {
	path := os.Getenv(stoppedAuditEnv)
	if path == "" {
		t.Skip("a helper of TestCommandsPastStoppedWriter")
	}
	log, err := audit.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	for {
		if err := log.Record(audit.Event{Kind: audit.KindGC}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestCommandsPastStoppedWriter: a corral process stopped (SIGSTOP) within
// a lease of writing an audit line, while the audit log is due to rotate,
// stops no other command: allow, port, host add and audit each finish
// within their deadline (before, allow and port hung with no timeout,
// allow holding the box's approvals lock).
func TestCommandsPastStoppedWriter(t *testing.T) {
	e, l := ownStateEnv(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoppedAuditHelper$")
	cmd.Env = append(os.Environ(), stoppedAuditEnv+"="+l.AuditLog())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck
		cmd.Process.Kill()                  //nolint:errcheck
		cmd.Wait()                          //nolint:errcheck
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper: %q", line)
	}
	// Stop it while it holds the shared lock: until no exclusive lock can
	// be taken.
	for try := 0; ; try++ {
		must(t, cmd.Process.Signal(syscall.SIGSTOP))
		time.Sleep(20 * time.Millisecond)
		if !canLockExclusive(t, l.AuditLog()+".lock") {
			break
		}
		if try == 200 {
			t.Fatal("never stopped holding the lease")
		}
		must(t, cmd.Process.Signal(syscall.SIGCONT))
		time.Sleep(time.Duration(try%7) * time.Millisecond)
	}
	// Due to rotate: past audit.MaxBytes (a sparse tail).
	must(t, os.Truncate(l.AuditLog(), audit.MaxBytes+1))
	for _, args := range [][]string{
		{"allow", e.box, "api.example.test"},
		{"port", e.box, "8080:80"},
		{"allow", e.box, "other.example.test"},
		{"host", "add", "gpu", "ssh://gpu.example.test"},
		{"audit", "--since", "1h"},
	} {
		t0 := time.Now()
		code, _, errOut := runFull(t, e, l, args...)
		if d := time.Since(t0); d > 5*time.Second {
			t.Errorf("%v took %v behind a stopped writer", args, d)
		}
		// port adds the port, then forwards it live over ssh, which this
		// fixture's box (running by its pid files) does not have: its
		// failure there is not the lock's.
		if code != 0 && (args[0] != "port" || strings.Contains(errOut, "lock")) {
			t.Errorf("%v: exit %d\n%s", args, code, errOut)
		}
	}
	if b, err := os.ReadFile(l.ProjectConfig(e.box)); err != nil || !strings.Contains(string(b), `"8080:80"`) {
		t.Errorf("port was not written: %v\n%s", err, b)
	}
}

// canLockExclusive reports whether the lock file can be taken exclusive
// now through a descriptor of its own, and drops it at once.
func canLockExclusive(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN) //nolint:errcheck
	return true
}
