package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// Flock takes a flock of kind how (syscall.LOCK_EX or LOCK_SH) on f, the
// lock file at path, waiting at most wait: every lock corral takes has a
// deadline, because a holder can be a stopped process (SIGSTOP, a
// debugger, a closed laptop lid) that keeps it for ever. It polls with a
// non-blocking flock (a blocking one cannot be given up). On timeout the
// error wraps ErrLockTimeout and names the holder when it can be found
// (LockHolder). A zero wait tries once.
func Flock(f *os.File, path string, how int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	delay := 100 * time.Microsecond
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return fmt.Errorf("locking %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			return &LockError{Path: path, Wait: wait, Holder: LockHolder(f)}
		}
		time.Sleep(min(delay, time.Until(deadline)+time.Millisecond))
		delay = min(2*delay, 20*time.Millisecond)
	}
}

// LockError is a lock that stayed held past its deadline.
type LockError struct {
	Path   string
	Wait   time.Duration
	Holder string // "pid 123 (corral allow ...)", or "" when unknown
}

func (e *LockError) Error() string {
	s := fmt.Sprintf("locking %s: %v (waited %s)", e.Path, ErrLockTimeout, e.Wait)
	if e.Holder != "" {
		s += "; held by " + e.Holder + " (a stopped process holds it until it is resumed or ends)"
	}
	return s
}
func (e *LockError) Unwrap() error { return ErrLockTimeout }

// maxProcLocks caps the read of /proc/locks.
const maxProcLocks = 4 << 20

// LockHolder names the processes that hold a lock on f's file, from
// /proc/locks (Linux), as "pid 123 (corral allow ...)"; where the system
// does not say (macOS), the pid an exclusive holder wrote into the file
// (MarkHolder), as "pid 123, by its own account"; "" when neither knows.
func LockHolder(f *os.File) string {
	if s := procLockHolder(f); s != "" {
		return s
	}
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return ""
	}
	return "pid " + strconv.Itoa(pid) + ", by its own account"
}

// MarkHolder writes this process's pid into f, the lock file it has just
// locked exclusive, for LockHolder where the system does not name holders.
// Best effort: the lock, not the content, is what counts.
func MarkHolder(f *os.File) {
	if f.Truncate(0) == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
}

// procLockHolder is LockHolder from /proc/locks.
func procLockHolder(f *os.File) string {
	fi, err := f.Stat()
	if err != nil {
		return ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	b, err := untrusted.ReadFile("/proc/locks", maxProcLocks)
	if err != nil {
		return ""
	}
	ino := ":" + strconv.FormatUint(uint64(st.Ino), 10)
	var who []string
	for line := range strings.SplitSeq(string(b), "\n") {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; blocked
		// waiters are "1: -> FLOCK ..." and are not holders.
		fs := strings.Fields(line)
		if len(fs) < 6 || fs[1] != "FLOCK" || !strings.HasSuffix(fs[5], ino) {
			continue
		}
		pid, err := strconv.Atoi(fs[4])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		s := "pid " + fs[4]
		if cmd := commandOf(pid); cmd != "" {
			s += " (" + cmd + ")"
		}
		who = append(who, s)
		if len(who) == 4 {
			break
		}
	}
	return strings.Join(who, ", ")
}

// commandOf is pid's command line, cut and escaped for an error message.
func commandOf(pid int) string {
	b, err := untrusted.ReadFile("/proc/"+strconv.Itoa(pid)+"/cmdline", 64<<10)
	if err != nil {
		return ""
	}
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) > 0 {
		args[0] = args[0][strings.LastIndex(args[0], "/")+1:]
	}
	s := strings.Join(args, " ")
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strconv.Quote(s)[1 : len(strconv.Quote(s))-1]
}

// TryFlock is one non-blocking try of Flock: whether the lock was taken.
func TryFlock(f *os.File, path string, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, fmt.Errorf("locking %s: %w", path, err)
	}
}

// StillAt reports whether f, a lock file just locked, is still the file at
// path: `corral gc` removes a lock file nobody holds (while holding it),
// so a locker that opened it before the removal holds a lock on a file no
// one else will open, and must open the path again.
func StillAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Lstat(path)
	return err == nil && os.SameFile(a, b)
}
