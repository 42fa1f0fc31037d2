//go:build linux && (amd64 || arm64)

package namerule

import (
	"fmt"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// followRule says whether a call follows a symbolic link in its last path
// component.
type followRule uint8

const (
	followNever    followRule = iota
	followAlways              // chmod, chown, truncate, setxattr, creat
	followOpen                // unless O_NOFOLLOW, or O_CREAT|O_EXCL
	followUnlessAt            // unless AT_SYMLINK_NOFOLLOW
	followIfAt                // only with AT_SYMLINK_FOLLOW (linkat's source)
)

// Argument indexes with a meaning of their own.
const (
	cwd  = -1 // dirfd: the call has none, it uses the working directory
	none = -1 // flags: the call has none
	fdOf = -2 // path: a descriptor call (f*), the descriptor is in dirfd
)

// target is one entry a call changes, found in its arguments.
type target struct {
	dirfd  int8 // argument index of the directory descriptor, or cwd
	path   int8 // argument index of the path pointer, or fdOf
	follow followRule
	flags  int8 // argument index of the open or AT_ flags, or none
}

// call is one trapped system call: its name (for the refusal line) and
// the entries it changes.
type call struct {
	name    string
	targets []target
}

// commonCalls are the trapped calls every supported ABI has. A call that
// changes an entry by path or by descriptor and is not here would pass
// untouched: the table was checked against the kernel's syscall list up to
// maxReviewed, and every number above it is refused (ENOSYS, so a caller
// falls back to an older call that is here).
var commonCalls = map[uint32]call{
	unix.SYS_OPENAT:        {"openat", []target{{dirfd: 0, path: 1, follow: followOpen, flags: 2}}},
	unix.SYS_MKDIRAT:       {"mkdirat", []target{{dirfd: 0, path: 1, flags: none}}},
	unix.SYS_MKNODAT:       {"mknodat", []target{{dirfd: 0, path: 1, flags: none}}},
	unix.SYS_SYMLINKAT:     {"symlinkat", []target{{dirfd: 1, path: 2, flags: none}}},
	unix.SYS_LINKAT:        {"linkat", []target{{dirfd: 0, path: 1, follow: followIfAt, flags: 4}, {dirfd: 2, path: 3, flags: none}}},
	unix.SYS_RENAMEAT:      {"renameat", []target{{dirfd: 0, path: 1, flags: none}, {dirfd: 2, path: 3, flags: none}}},
	unix.SYS_RENAMEAT2:     {"renameat2", []target{{dirfd: 0, path: 1, flags: none}, {dirfd: 2, path: 3, flags: none}}},
	unix.SYS_UNLINKAT:      {"unlinkat", []target{{dirfd: 0, path: 1, flags: none}}},
	unix.SYS_FCHMODAT:      {"fchmodat", []target{{dirfd: 0, path: 1, follow: followAlways, flags: none}}}, // the system call has no flags
	unix.SYS_FCHMODAT2:     {"fchmodat2", []target{{dirfd: 0, path: 1, follow: followUnlessAt, flags: 3}}},
	unix.SYS_FCHOWNAT:      {"fchownat", []target{{dirfd: 0, path: 1, follow: followUnlessAt, flags: 4}}},
	unix.SYS_TRUNCATE:      {"truncate", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_SETXATTR:      {"setxattr", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_REMOVEXATTR:   {"removexattr", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_LSETXATTR:     {"lsetxattr", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_LREMOVEXATTR:  {"lremovexattr", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_SETXATTRAT:    {"setxattrat", []target{{dirfd: 0, path: 1, follow: followUnlessAt, flags: 2}}},
	unix.SYS_REMOVEXATTRAT: {"removexattrat", []target{{dirfd: 0, path: 1, follow: followUnlessAt, flags: 2}}},
	unix.SYS_FILE_SETATTR:  {"file_setattr", []target{{dirfd: 0, path: 1, follow: followUnlessAt, flags: 4}}},
	unix.SYS_FCHMOD:        {"fchmod", []target{{dirfd: 0, path: fdOf, flags: none}}},
	unix.SYS_FCHOWN:        {"fchown", []target{{dirfd: 0, path: fdOf, flags: none}}},
	unix.SYS_FSETXATTR:     {"fsetxattr", []target{{dirfd: 0, path: fdOf, flags: none}}},
	unix.SYS_FREMOVEXATTR:  {"fremovexattr", []target{{dirfd: 0, path: fdOf, flags: none}}},
}

// maxReviewed is the highest system call number whose meaning the tables
// were checked against (Linux 6.18: rseq_slice_yield). Newer calls get
// ENOSYS: one that changes the file system would otherwise pass unseen.
const maxReviewed = unix.SYS_RSEQ_SLICE_YIELD

// enosysCalls are refused with ENOSYS, so qemu and the C library fall back
// to calls the filter sees: openat2 (its flags are behind a pointer),
// io_uring (its operations never pass through seccomp), the handle calls
// and the new mount API.
var enosysCalls = []uint32{
	unix.SYS_OPENAT2, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
	unix.SYS_OPEN_TREE, unix.SYS_OPEN_TREE_ATTR, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
}

// epermCalls are refused with EPERM: the supervisor is qemu's child, and
// nothing under the filter may reach into it.
var epermCalls = []uint32{unix.SYS_PTRACE, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD}

// writeIntent are the open flags that may change an entry: an open without
// any of them is read-only and not trapped (O_TMPFILE needs O_WRONLY or
// O_RDWR; O_TRUNC truncates even with O_RDONLY).
const writeIntent = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC

// calls is every trapped call of this ABI.
func calls() map[uint32]call {
	out := make(map[uint32]call, len(commonCalls)+len(legacyCalls))
	for nr, c := range commonCalls {
		out[nr] = c
	}
	for nr, c := range legacyCalls {
		out[nr] = c
	}
	return out
}

// program is the filter: the native ABI only; refused calls; an open
// without write intent allowed in the kernel; every other trapped call
// sent to the supervisor; the rest allowed.
func program() []unix.SockFilter {
	const (
		ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jgt  = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
	)
	const (
		offNr   = 0
		offArch = 4
		offArgs = 16 // low 32 bits of args[i] at offArgs+8*i (little endian)
	)
	var (
		allow  = uint32(unix.SECCOMP_RET_ALLOW)
		notify = uint32(unix.SECCOMP_RET_USER_NOTIF)
		enosys = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.ENOSYS)
		eperm  = uint32(unix.SECCOMP_RET_ERRNO) | uint32(unix.EPERM)
	)
	p := []unix.SockFilter{
		{Code: ldW, K: offArch},
		{Code: jeq, Jt: 1, K: auditArch},
		{Code: ret, K: enosys},
		{Code: ldW, K: offNr},
		{Code: jgt, Jf: 1, K: maxReviewed},
		{Code: ret, K: enosys},
	}
	if x32Bit != 0 {
		p = append(p, unix.SockFilter{Code: jset, Jf: 1, K: x32Bit}, unix.SockFilter{Code: ret, K: enosys})
	}
	for _, nr := range enosysCalls {
		p = append(p, unix.SockFilter{Code: jeq, Jf: 1, K: nr}, unix.SockFilter{Code: ret, K: enosys})
	}
	for _, nr := range epermCalls {
		p = append(p, unix.SockFilter{Code: jeq, Jf: 1, K: nr}, unix.SockFilter{Code: ret, K: eperm})
	}
	all := calls()
	nrs := make([]uint32, 0, len(all))
	for nr := range all {
		nrs = append(nrs, nr)
	}
	slices.Sort(nrs)
	for _, nr := range nrs {
		c := all[nr]
		if c.targets[0].follow == followOpen {
			// The accumulator is the number until here; this block ends
			// in a return either way.
			p = append(p,
				unix.SockFilter{Code: jeq, Jf: 4, K: nr},
				unix.SockFilter{Code: ldW, K: uint32(offArgs + 8*int(c.targets[0].flags))},
				unix.SockFilter{Code: jset, Jf: 1, K: writeIntent},
				unix.SockFilter{Code: ret, K: notify},
				unix.SockFilter{Code: ret, K: allow},
			)
			continue
		}
		p = append(p, unix.SockFilter{Code: jeq, Jf: 1, K: nr}, unix.SockFilter{Code: ret, K: notify})
	}
	return append(p, unix.SockFilter{Code: ret, K: allow})
}

// Install sets the filter on the calling thread (lock it to its goroutine
// first: the filter must be on the thread that execs qemu, and qemu then
// inherits it in every thread and child) and returns the listener.
// PR_SET_NO_NEW_PRIVS comes first, as an unprivileged filter needs it.
func Install() (int, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return -1, fmt.Errorf("setting no_new_privs: %w", err)
	}
	prog := program()
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_NEW_LISTENER, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return -1, fmt.Errorf("installing the seccomp filter: %w", errno)
	}
	return int(fd), nil
}
