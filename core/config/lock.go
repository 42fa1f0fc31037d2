package config

import (
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/atomicfile"
)

// lockFile takes an exclusive flock on path (a sibling lock file, created
// if missing) and returns the function that releases it. The layer file
// itself is replaced by rename, so it cannot carry the lock.
func lockFile(path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), atomicfile.DirMode); err != nil {
		return nil, fmt.Errorf("creating directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, atomicfile.FileMode)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}
