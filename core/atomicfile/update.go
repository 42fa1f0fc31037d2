package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// LockSuffix names the lock file beside a file that Update changes. The
// lock is a file of its own because the data file is replaced by rename:
// a lock on it would not exclude a writer that opened the new file.
const LockSuffix = ".lock"

// LockWait bounds how long Lock waits for another holder. A holder reads
// and writes one small file (its reads never block: see Update), so a
// wait this long means a stopped or wedged process, and the error says so
// rather than hanging the command.
const LockWait = 30 * time.Second

// ErrLockTimeout is returned when a lock stayed held for LockWait.
var ErrLockTimeout = errors.New("lock held too long by another process")

// Lock takes an exclusive flock on the lock file at path (created with
// FileMode, and its directory with DirMode; it must be a regular file)
// and returns the function that releases it. It waits up to LockWait.
func Lock(path string) (unlock func(), err error) { return lock(path, LockWait) }

func lock(path string, wait time.Duration) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), DirMode); err != nil {
		return nil, fmt.Errorf("creating directory for %s: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	for {
		f, err := untrusted.OpenLock(path, FileMode)
		if err != nil {
			return nil, fmt.Errorf("opening lock %s: %w", path, err)
		}
		if err := Flock(f, path, syscall.LOCK_EX, max(time.Until(deadline), 0)); err != nil {
			f.Close()
			return nil, err
		}
		if StillAt(f, path) {
			MarkHolder(f)
			return func() { f.Close() }, nil // closing the descriptor releases the lock
		}
		f.Close() // removed by gc while we waited: lock the new file
	}
}

// Update is a read-modify-write of the file at path under an exclusive
// lock on path+LockSuffix, so that writers in several goroutines and
// processes never lose each other's change. fn gets the current content
// (nil when the file does not exist) and returns the new one; an error
// from fn writes nothing and is returned as is.
//
// The read is untrusted.ReadFile's (regular file, non-blocking open, at
// most limit bytes), so a FIFO or a device in the file's place cannot
// block a command while it holds the lock: the read fails, naming the
// file, and the lock is released. Content fn returns that is larger than
// limit is refused before anything is written, so Update never writes a
// file that its own next read would refuse; fn should likewise check the
// new content with the same decoder its readers use. Content equal to the
// old one is not written (a no-op does not wake a file watcher).
func Update(path string, limit int64, fn func(old []byte) ([]byte, error)) error {
	return update(path, untrusted.Limits{Size: limit}, nil, fn)
}

// UpdateJSON is Update for a JSON file: the old content is read with
// untrusted.ReadJSON (size, nesting and item caps checked before fn's
// parser sees it) and the new content must pass the same check before it
// is written, so corral never writes a file its reader would refuse.
func UpdateJSON(path string, lim untrusted.Limits, fn func(old []byte) ([]byte, error)) error {
	return update(path, lim, untrusted.CheckJSON, fn)
}

func update(path string, lim untrusted.Limits, check func([]byte, untrusted.Limits) error, fn func(old []byte) ([]byte, error)) error {
	limit := lim.Size
	unlock, err := Lock(path + LockSuffix)
	if err != nil {
		return err
	}
	defer unlock()
	old, err := untrusted.ReadFile(path, limit)
	if err == nil && check != nil {
		err = check(old, lim)
		var se *untrusted.ShapeError
		if errors.As(err, &se) {
			se.Path = path
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		old, err = nil, nil
	}
	if err != nil {
		return err
	}
	next, err := fn(old)
	if err != nil {
		return err
	}
	if old != nil && bytes.Equal(old, next) {
		return nil
	}
	if int64(len(next)) > limit {
		return fmt.Errorf("writing %s: %d bytes, more than the %d allowed: %w", path, len(next), limit, untrusted.ErrTooLarge)
	}
	if check != nil {
		if err := check(next, lim); err != nil {
			return fmt.Errorf("writing %s: refusing content its reader would refuse: %w", path, err)
		}
	}
	return WriteFile(path, next, FileMode)
}
