package box

import (
	"context"
	"fmt"
	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/untrusted"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/display"
	"golang.org/x/sys/unix"
)

// quietLockWait is how long LockBox waits before it says so.
const quietLockWait = time.Second

// boxLockWait bounds the wait for a box's lock: longer than any create
// (a golden build included) takes, so a wait this long means a stopped or
// wedged holder, and the error names it.
const boxLockWait = 45 * time.Minute

// Lock is an exclusive, per-box lock held across create, start, stop and
// rm, so two `corral up` for one project never race.
type Lock struct{ f *os.File }

// LockBox takes the box lock, waiting while another corral holds it and
// saying who does.
func (s *Service) LockBox(ctx context.Context, box string) (*Lock, error) {
	path := s.Layout.Lock(box)
	if err := os.MkdirAll(s.Layout.RunDir(), 0o700); err != nil {
		return nil, err
	}
	f, err := untrusted.OpenLock(path, 0o600)
	if err != nil {
		return nil, hint.New(fmt.Errorf("opening lock %s: %w", path, err), "corral writes this file: move it away or delete it")
	}
	// A session on a running box holds the lock for milliseconds: waiting
	// for one is not worth a word. A create or a start holds it for
	// minutes, and the user should know why nothing happens.
	start, told, delay := time.Now(), false, 10*time.Millisecond
	for {
		ok, err := atomicfile.TryFlock(f, path, unix.LOCK_EX)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok && !atomicfile.StillAt(f, path) { // removed by gc meanwhile: lock the new file
			f.Close()
			if f, err = untrusted.OpenLock(path, 0o600); err != nil {
				return nil, hint.New(fmt.Errorf("opening lock %s: %w", path, err), "corral writes this file: move it away or delete it")
			}
			continue
		}
		if ok {
			break
		}
		if time.Since(start) > boxLockWait {
			err := &atomicfile.LockError{Path: path, Wait: boxLockWait, Holder: atomicfile.LockHolder(f)}
			f.Close()
			return nil, fmt.Errorf("waiting for the lock of box %s: %w", box, err)
		}
		if !told && time.Since(start) >= quietLockWait {
			b, _ := untrusted.ReadFile(path, 64)
			s.progress("waiting for box %s: another corral (pid %s) is working on it", box, display.Text(strings.TrimSpace(string(b)), 20))
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock of box %s: %w", box, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
	atomicfile.MarkHolder(f)
	return &Lock{f: f}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() {
	if l != nil && l.f != nil {
		_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
		_ = l.f.Close()
	}
}
