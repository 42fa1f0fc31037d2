package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// counterEnv makes the test binary a process that increments the counter
// file: "path|times".
const counterEnv = "CORRAL_ATOMICFILE_TEST_COUNTER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(counterEnv); spec != "" {
		path, n, _ := strings.Cut(spec, "|")
		times, _ := strconv.Atoi(n)
		for range times {
			if err := increment(path); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func increment(path string) error {
	return Update(path, 64, func(old []byte) ([]byte, error) {
		n := 0
		if old != nil {
			var err error
			if n, err = strconv.Atoi(string(old)); err != nil {
				return nil, err
			}
		}
		return []byte(strconv.Itoa(n + 1)), nil
	})
}

// Every increment lands: goroutines and processes at once, none lost.
func TestUpdateLosesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "n")
	const goroutines, procs, times = 8, 4, 50
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), counterEnv+"="+path+"|"+strconv.Itoa(times))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range times {
				if err := increment(path); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Error(err)
		}
	}
	b, _ := os.ReadFile(path)
	if want := strconv.Itoa((goroutines + procs) * times); string(b) != want {
		t.Fatalf("counter %s, want %s", b, want)
	}
}

func TestUpdateRefuses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	set := func(s string) func([]byte) ([]byte, error) {
		return func([]byte) ([]byte, error) { return []byte(s), nil }
	}
	if err := Update(path, 4, set("12345")); !errors.Is(err, untrusted.ErrTooLarge) {
		t.Fatalf("oversized write: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("oversized content was written: %v", err)
	}
	boom := errors.New("boom")
	if err := Update(path, 4, func([]byte) ([]byte, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("fn error: %v", err)
	}
	// A FIFO in the file's place fails the read at once, and the lock is
	// free again afterwards.
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Update(path, 4, set("1")) }()
	select {
	case err := <-done:
		if !errors.Is(err, untrusted.ErrNotRegular) || !strings.Contains(err.Error(), path) {
			t.Fatalf("FIFO: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Update blocked on a FIFO")
	}
	os.Remove(path)
	if err := Update(path, 4, set("1")); err != nil {
		t.Fatalf("after the FIFO is gone: %v", err)
	}
	// A FIFO as the lock file is refused too.
	lockPath := filepath.Join(dir, "g"+LockSuffix)
	if err := syscall.Mkfifo(lockPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Update(filepath.Join(dir, "g"), 4, set("1")); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Fatalf("FIFO lock: %v", err)
	}
}

func TestLockTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lock(path, 50*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("second lock: %v", err)
	}
	unlock()
	unlock2, err := lock(path, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	unlock2()
}

// TestLockRefusesSymlink: a symbolic link at a lock path, dangling or not,
// is refused and never followed: corral created the file a dangling one
// pointed to. UpdateJSON refuses it before reading or writing anything.
func TestLockRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	path := filepath.Join(dir, "x.json")
	if err := os.Symlink(target, path+LockSuffix); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(path + LockSuffix); !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("Lock through a dangling link = %v", err)
	}
	err := UpdateJSON(path, untrusted.State(1<<10), func([]byte) ([]byte, error) { return []byte("{}"), nil })
	if !errors.Is(err, untrusted.ErrNotRegular) {
		t.Errorf("UpdateJSON = %v", err)
	}
	for _, p := range []string{target, path} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", p, err)
		}
	}
}

// TestUpdateJSONShape: UpdateJSON refuses old content its reader would
// refuse (too deep) and never writes new content that is.
func TestUpdateJSONShape(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.json")
	lim := untrusted.Limits{Size: 1 << 10, Depth: 4, Items: 100}
	deep := strings.Repeat("[", 5) + strings.Repeat("]", 5)
	if err := UpdateJSON(path, lim, func([]byte) ([]byte, error) { return []byte(deep), nil }); !errors.Is(err, untrusted.ErrTooDeep) {
		t.Errorf("writing too deep: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("written: %v", err)
	}
	if err := os.WriteFile(path, []byte(deep), 0o600); err != nil {
		t.Fatal(err)
	}
	called := false
	err := UpdateJSON(path, lim, func([]byte) ([]byte, error) { called = true; return []byte("[]"), nil })
	if !errors.Is(err, untrusted.ErrTooDeep) || called || !strings.Contains(err.Error(), path) {
		t.Errorf("reading too deep: %v (fn called: %v)", err, called)
	}
}

// TestLockAfterRemoval: a locker that opened the lock file before `corral
// gc` removed it (gc removes a lock nobody holds, while holding it) takes
// the lock again on the file now at the path, so it never holds a lock
// on a file no one else opens.
func TestLockAfterRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func(), 1)
	go func() {
		u, err := Lock(path)
		if err != nil {
			t.Error(err)
		}
		got <- u
	}()
	time.Sleep(100 * time.Millisecond) // the second locker waits on the old file
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	unlock()
	u := <-got
	defer u()
	// The lock it holds is the one on the file at path: a third locker
	// waits for it.
	if _, err := lock(path, 50*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Errorf("third locker: %v, want a timeout (the second holds the lock at path)", err)
	}
}

// TestLockHolderNamed: a lock timeout names the holder: from /proc/locks
// where the system says (here, another process holding it), else by the
// pid the holder wrote into the file (macOS).
func TestLockHolderNamed(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	if err := os.WriteFile(path, []byte("4242\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := LockHolder(f); got != "pid 4242, by its own account" {
		t.Errorf("from the file: %q", got)
	}
	if _, err := os.Stat("/proc/locks"); err != nil {
		t.Skip("no /proc/locks")
	}
	cmd := exec.Command("flock", path, "sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skip("no flock(1):", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }() //nolint:errcheck
	deadline := time.Now().Add(5 * time.Second)
	for {
		unlock, err := lock(path, 10*time.Millisecond)
		if err == nil {
			unlock() // flock(1) has not taken it yet
		}
		var le *LockError
		if errors.As(err, &le) && strings.Contains(le.Holder, "(flock ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("holder not named: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
