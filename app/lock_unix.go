//go:build unix

package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/untrusted"
)

// acquireLock takes an exclusive flock on StateDir/app.lock and writes our
// PID into it. The lock, not the file, is what counts: it is released by
// the kernel when the process dies, so a stale file never blocks a start.
// The file is never removed (removing it could let two instances lock two
// different files).
func acquireLock(dir string) (release func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating app state directory %s: %w", dir, err)
	}
	p := filepath.Join(dir, "app.lock")
	f, err := untrusted.OpenLock(p, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening app lock %s: %w", p, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b, _ := untrusted.ReadFile(p, 64)
			pid := strings.TrimSpace(string(b))
			if _, perr := strconv.Atoi(pid); perr != nil {
				pid = "unknown"
			}
			return nil, fmt.Errorf("another instance (pid %s) holds %s: %w", pid, p, ErrAlreadyRunning)
		}
		return nil, fmt.Errorf("locking %s: %w", p, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}
