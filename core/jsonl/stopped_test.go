package jsonl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/atomicfile"
)

// stoppedEnv makes the test binary a process that the test stops with
// SIGSTOP: "append|PATH" appends lines for ever (holding the shared
// lease most of the time); "exclusive|PATH" takes the exclusive lock as a
// rotation does and keeps it. Either prints "ready" first.
const stoppedEnv = "CORRAL_JSONL_TEST_STOPPED"

func runStopped(spec string) error {
	mode, path, _ := strings.Cut(spec, "|")
	switch mode {
	case "append":
		// No rotation of its own: it only ever holds the shared lock (a
		// process stopped in a rotation is TestStoppedRotationHolder's).
		w, err := Open(path, Options{})
		if err != nil {
			return err
		}
		fmt.Println("ready")
		for i := 0; ; i++ {
			if err := w.Append(rec{W: 9, I: i}); err != nil {
				return err
			}
			time.Sleep(time.Millisecond)
		}
	case "exclusive":
		f, err := os.OpenFile(path+lockSuffix, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			return err
		}
		fmt.Println("ready")
		select {}
	}
	return fmt.Errorf("bad spec %q", spec)
}

// startStopped starts a stoppedEnv process and stops it (SIGSTOP) once it
// holds the lock the way held says: until tryExclusive fails.
func startStopped(t *testing.T, mode, path string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), stoppedEnv+"="+mode+"|"+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck
		cmd.Process.Kill()                  //nolint:errcheck
		cmd.Wait()                          //nolint:errcheck
	})
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("helper said %q", line)
	}
	for try := 0; ; try++ {
		if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		if !tryExclusive(t, path) {
			return cmd // stopped while it holds the lock
		}
		if try == 200 {
			t.Fatal("the helper was never stopped holding the lock")
		}
		cmd.Process.Signal(syscall.SIGCONT) //nolint:errcheck
		time.Sleep(time.Duration(try%7) * time.Millisecond)
	}
}

// TestStoppedLeaseHolderDuringRotation: a writer stopped (SIGSTOP) while
// it holds the shared lease of a log due to rotate stops no one. Before,
// the rotation waited on flock for ever, and `allow` hung holding the
// box's approvals lock. Now each append of every other writer returns
// within rotateWait (the rotation given up; the line appended under the
// shared lock), no line is lost, and reading works; once the writer is
// gone the log rotates again.
func TestStoppedLeaseHolderDuringRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(strings.Repeat(`{"w":0,"i":0,"pad":""}`+"\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped := startStopped(t, "append", path)
	fill := func() { // due to rotate, whatever the helper wrote
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(strings.Repeat(`{"w":0,"i":0,"pad":""}`+"\n", 100)) //nolint:errcheck
		f.Close()
	}
	fill()
	want := map[[2]int]bool{}
	for cmd := range 5 { // five commands, each a writer of its own
		w, err := Open(path, Options{MaxBytes: 1 << 10})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			t0 := time.Now()
			if err := w.Append(rec{W: 100 + cmd, I: i}); err != nil {
				t.Fatalf("append: %v", err)
			}
			if d := time.Since(t0); d > rotateWait+2*time.Second {
				t.Errorf("an append took %v behind a stopped writer", d)
			}
			want[[2]int{100 + cmd, i}] = true
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	err := ReadAll(path, func(line []byte) error {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		delete(want, [2]int{r.W, r.I})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Errorf("reading took %v", d)
	}
	if len(want) > 0 {
		t.Errorf("lines lost: %v", want)
	}
	// The stopped writer gone, the next append rotates.
	stopped.Process.Kill() //nolint:errcheck
	stopped.Wait()         //nolint:errcheck
	os.Remove(path + RotatedSuffix)
	fill()
	w, err := Open(path, Options{MaxBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append(rec{W: 200}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + RotatedSuffix); err != nil {
		t.Errorf("no rotation once the stopped writer was gone: %v", err)
	}
}

// TestStoppedRotationHolder: a process stopped while it holds the
// exclusive lock (in the middle of a rotation) makes appends and reads
// fail within LockWait, naming it, instead of hanging.
func TestStoppedRotationHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, []byte(`{"w":0,"i":0,"pad":""}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stopped := startStopped(t, "exclusive", path)
	w, err := Open(path, Options{MaxBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	t0 := time.Now()
	err = w.Append(rec{W: 1})
	if d := time.Since(t0); d > rotateWait+LockWait+2*time.Second {
		t.Errorf("append took %v", d)
	}
	if !errors.Is(err, atomicfile.ErrLockTimeout) {
		t.Fatalf("append = %v, want a lock timeout", err)
	}
	if _, perr := os.Stat("/proc/locks"); perr == nil && !strings.Contains(err.Error(), "pid "+strconv.Itoa(stopped.Process.Pid)) {
		t.Errorf("the error does not name the holder: %v", err)
	}
}
