//go:build linux && (amd64 || arm64)

package namerule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// notif is struct seccomp_notif (with struct seccomp_data inlined).
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

// notifResp is struct seccomp_notif_resp.
type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// The ioctl numbers (linux/seccomp.h); x/sys has RECV and SEND for every
// ABI but ID_VALID only for some.
const (
	ioctlRecv    = 0xc0502100
	ioctlSend    = 0xc0182101
	ioctlIDValid = 0x40082102
)

// pathMax is the kernel's PATH_MAX: a longer path fails the call anyway.
const pathMax = 4096

// Refusal is one refused call, for the supervisor's report.
type Refusal struct {
	Call string // the system call
	At   string // the path up to the .git name, or the entry
	Why  string
}

// Supervisor answers the filter's notifications for one qemu.
type Supervisor struct {
	rule  Rule
	fd    int
	calls map[uint32]call
	// Report is called for each refusal (from several goroutines);
	// nil reports nothing.
	Report  func(Refusal)
	refused atomic.Int64
	mem     memFiles
}

// NewSupervisor answers the notifications of listener by rule.
func NewSupervisor(listener int, rule Rule) *Supervisor {
	return &Supervisor{rule: rule, fd: listener, calls: calls()}
}

// Refused is how many calls were refused so far.
func (s *Supervisor) Refused() int64 { return s.refused.Load() }

// workers answer notifications side by side, each blocked in its own
// receive: qemu's 9p server runs its calls in a thread pool, and one slow
// answer (a /proc read) must not hold the others.
const workers = 4

// Run answers notifications until every process under the filter has
// exited (the listener reports POLLHUP), then returns nil. Workers left
// blocked in a receive then are the process's to end.
func (s *Supervisor) Run() error {
	failed := make(chan error, workers)
	for range workers {
		go func() {
			for {
				var n notif
				_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), ioctlRecv, uintptr(unsafe.Pointer(&n)))
				switch errno {
				case 0:
					s.respond(n)
				case unix.ENOENT, unix.EINTR:
					// The caller died or was interrupted before we read it.
				default:
					failed <- fmt.Errorf("reading a seccomp notification: %w", errno)
					return
				}
			}
		}()
	}
	// Asking for no events, poll still reports the hang-up.
	fds := []unix.PollFd{{Fd: int32(s.fd)}}
	for {
		select {
		case err := <-failed:
			return err
		default:
		}
		fds[0].Revents = 0
		if _, err := unix.Poll(fds, 1000); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("waiting for the seccomp listener: %w", err)
		}
		if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
			return nil
		}
	}
}

// respond decides one call and answers it: continue (the kernel carries
// out the call as it was made) or an errno.
func (s *Supervisor) respond(n notif) {
	resp := notifResp{ID: n.ID}
	if errno := s.decide(n); errno != 0 {
		resp.Error = -int32(errno)
	} else {
		resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
	}
	// ENOENT: the caller is gone; nothing waits for the answer.
	unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), ioctlSend, uintptr(unsafe.Pointer(&resp)))
}

// decide checks every entry the call changes; 0 lets it through.
func (s *Supervisor) decide(n notif) unix.Errno {
	c, ok := s.calls[uint32(n.Nr)]
	if !ok {
		return 0
	}
	pid := int(n.Pid)
	for _, t := range c.targets {
		errno, at, why := s.check(n, pid, t)
		if errno == 0 {
			continue
		}
		// Act only on a notification that is still the same call: its
		// task may have died and its pid been reused while we read.
		if !s.valid(n.ID) {
			return unix.ENOENT
		}
		if errno == unix.EPERM {
			s.refused.Add(1)
			if s.Report != nil {
				s.Report(Refusal{Call: c.name, At: at, Why: why})
			}
		}
		return errno
	}
	return 0
}

func (s *Supervisor) valid(id uint64) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), ioctlIDValid, uintptr(unsafe.Pointer(&id)))
	return errno == 0
}

// Why a call was refused.
const (
	whyDotGit    = "a .git name in the work tree"
	whyHead      = "a HEAD file in the work tree (a bare repository)"
	whyMulti     = "a path of several components into the project"
	whyAbsolute  = "an absolute path into the project"
	whyFollowing = "following a symbolic link in the project"
)

// check decides one entry of a call: 0, or the errno to answer with the
// path and reason when it is EPERM.
func (s *Supervisor) check(n notif, pid int, t target) (unix.Errno, string, string) {
	var flags uint64
	if t.flags >= 0 {
		flags = n.Args[t.flags]
	}
	dirfd := func() int {
		if t.dirfd == cwd {
			return unix.AT_FDCWD
		}
		return int(int32(n.Args[t.dirfd]))
	}
	if t.path == fdOf {
		return s.checkFD(pid, dirfd(), false)
	}
	follows := false
	switch t.follow {
	case followAlways:
		follows = true
	case followOpen:
		follows = flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
	case followUnlessAt:
		follows = flags&unix.AT_SYMLINK_NOFOLLOW == 0
	case followIfAt:
		follows = flags&unix.AT_SYMLINK_FOLLOW != 0
	}
	emptyPathOK := t.follow != followOpen && t.flags >= 0 && flags&unix.AT_EMPTY_PATH != 0
	path, errno := s.readString(pid, n.Args[t.path])
	if errno != 0 {
		return errno, "", ""
	}
	if path == "" {
		if emptyPathOK && dirfd() != unix.AT_FDCWD {
			return s.checkFD(pid, dirfd(), follows)
		}
		return 0, "", "" // the kernel answers ENOENT
	}
	var base, rel string
	switch fd, rest, ok := procSelfFD(path); {
	case ok && rest == "":
		return s.checkFD(pid, fd, follows)
	case ok:
		base, rel = fmt.Sprintf("/proc/%d/fd/%d", pid, fd), rest
	case filepath.IsAbs(path):
		return s.checkAbs(path)
	case dirfd() == unix.AT_FDCWD:
		base, rel = fmt.Sprintf("/proc/%d/cwd", pid), path
	default:
		base, rel = fmt.Sprintf("/proc/%d/fd/%d", pid, dirfd()), path
	}
	realBase, err := os.Readlink(base)
	if err != nil {
		return unix.EBADF, "", ""
	}
	if !filepath.IsAbs(realBase) {
		return 0, "", "" // not a directory on a file system: the call fails
	}
	rel = strings.TrimRight(rel, "/")
	if rel == "" {
		rel = "."
	}
	if strings.Contains(rel, "/") {
		lexical := filepath.Join(realBase, rel)
		if s.rule.Under(lexical) || s.rule.Under(realBase) {
			return unix.EPERM, lexical, whyMulti
		}
		parent, errno := resolveDir(base + "/" + filepath.Dir(rel))
		if errno != 0 {
			return errno, "", ""
		}
		if s.rule.Under(parent) {
			return unix.EPERM, filepath.Join(parent, filepath.Base(rel)), whyMulti
		}
		return 0, "", ""
	}
	full := filepath.Join(realBase, rel)
	if !s.rule.Under(full) && !s.rule.Under(realBase) {
		return 0, "", ""
	}
	if follows {
		return unix.EPERM, full, whyFollowing
	}
	if at, bad := s.rule.Refuses(full); bad {
		if rel != "." && rel != ".." && s.exemptMount(base) {
			return 0, "", ""
		}
		return unix.EPERM, at, why(at)
	}
	return 0, "", ""
}

func why(at string) string {
	if filepath.Base(at) == BareHead {
		return whyHead
	}
	return whyDotGit
}

// checkFD decides a change to what descriptor fd of pid is open on.
func (s *Supervisor) checkFD(pid, fd int, follows bool) (unix.Errno, string, string) {
	p := fmt.Sprintf("/proc/%d/fd/%d", pid, fd)
	real, err := os.Readlink(p)
	if err != nil {
		return unix.EBADF, "", ""
	}
	real = strings.TrimSuffix(real, " (deleted)")
	if !filepath.IsAbs(real) || !s.rule.Under(real) {
		return 0, "", "" // a socket, a pipe, or outside the project
	}
	if follows {
		if fi, err := os.Lstat(real); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return unix.EPERM, real, whyFollowing
		}
	}
	if at, bad := s.rule.Refuses(real); bad {
		if s.exemptMount(p) {
			return 0, "", ""
		}
		return unix.EPERM, at, why(at)
	}
	return 0, "", ""
}

// checkAbs decides a change by absolute path: qemu reaches the project
// only through descriptors, so one into it is refused.
func (s *Supervisor) checkAbs(path string) (unix.Errno, string, string) {
	clean := filepath.Clean(path)
	if s.rule.Under(clean) {
		return unix.EPERM, clean, whyAbsolute
	}
	parent, errno := resolveDir(filepath.Dir(clean))
	if errno != 0 {
		return errno, "", ""
	}
	if s.rule.Under(parent) {
		return unix.EPERM, filepath.Join(parent, filepath.Base(clean)), whyAbsolute
	}
	return 0, "", ""
}

// exemptMount reports whether what p (a /proc descriptor link) names is
// on one of the box's private mounts.
func (s *Supervisor) exemptMount(p string) bool {
	if len(s.rule.Exempt) == 0 {
		return false
	}
	id, err := MountID(p)
	return err == nil && s.rule.exempt(id)
}

// MountID is the mount ID of what p names (following links), as
// /proc/self/mountinfo numbers mounts.
func MountID(p string) (uint64, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, 0, unix.STATX_MNT_ID, &st); err != nil {
		return 0, fmt.Errorf("reading the mount of %s: %w", p, err)
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, fmt.Errorf("reading the mount of %s: the kernel gave no mount ID", p)
	}
	return st.Mnt_id, nil
}

// resolveDir opens p as the kernel resolves it (following every link)
// and returns the directory's real path.
func resolveDir(p string) (string, unix.Errno) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		var errno unix.Errno
		if errors.As(err, &errno) {
			return "", errno
		}
		return "", unix.EACCES
	}
	defer unix.Close(fd)
	real, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return "", unix.EACCES
	}
	return real, 0
}

// procSelfFD splits "/proc/self/fd/N[/rest]" (and thread-self): qemu's 9p
// server names an entry through its own descriptor that way, which the
// supervisor must read in qemu's descriptor table, not its own.
func procSelfFD(path string) (fd int, rest string, ok bool) {
	var tail string
	switch {
	case strings.HasPrefix(path, "/proc/self/fd/"):
		tail = path[len("/proc/self/fd/"):]
	case strings.HasPrefix(path, "/proc/thread-self/fd/"):
		tail = path[len("/proc/thread-self/fd/"):]
	default:
		return 0, "", false
	}
	num, rest, _ := strings.Cut(tail, "/")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return 0, "", false
	}
	return n, rest, true
}

// memFiles keeps /proc/TID/mem open per calling thread: qemu's 9p
// threads are a pool, and an open per call would double the cost. A read
// that fails drops the file and opens it again once (the thread may have
// gone and its id been reused); ID_VALID guards every refusal all the same.
type memFiles struct {
	mu    sync.Mutex
	files map[int]*os.File
}

const maxMemFiles = 256

func (m *memFiles) get(pid int, fresh bool) (*os.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[int]*os.File{}
	}
	if f := m.files[pid]; f != nil {
		if !fresh {
			return f, nil
		}
		f.Close()
		delete(m.files, pid)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	if len(m.files) >= maxMemFiles {
		for k, old := range m.files {
			old.Close()
			delete(m.files, k)
		}
	}
	m.files[pid] = f
	return f, nil
}

// readString reads a NUL-terminated path at addr in pid's memory.
func (s *Supervisor) readString(pid int, addr uint64) (string, unix.Errno) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	for _, fresh := range []bool{false, true} {
		f, err := s.mem.get(pid, fresh)
		if err != nil {
			return "", unix.ESRCH
		}
		if p, errno := readStringFrom(f, addr); errno != unix.EFAULT || fresh {
			return p, errno
		}
	}
	return "", unix.EFAULT
}

// readStringFrom reads a NUL-terminated string at addr, a page at a time
// (a read across an unmapped page fails).
func readStringFrom(f *os.File, addr uint64) (string, unix.Errno) {
	var out []byte
	buf := make([]byte, 4096)
	for len(out) < pathMax {
		chunk := 4096 - int(addr%4096)
		if chunk > pathMax-len(out) {
			chunk = pathMax - len(out)
		}
		n, err := f.ReadAt(buf[:chunk], int64(addr))
		if n > 0 {
			if i := indexNUL(buf[:n]); i >= 0 {
				return string(append(out, buf[:i]...)), 0
			}
			out = append(out, buf[:n]...)
			addr += uint64(n)
		}
		if err != nil && err != io.EOF || n == 0 {
			return "", unix.EFAULT
		}
	}
	return "", unix.ENAMETOOLONG
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
