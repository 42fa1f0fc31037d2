package namerule

import "golang.org/x/sys/unix"

// auditArch is the only ABI the filter lets through: a 32-bit call (int
// 0x80) or an x32 one would reach other numbers, so both get ENOSYS.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

// legacyCalls are the trapped path calls of the old, non-*at forms this
// ABI also has.
var legacyCalls = map[uint32]call{
	unix.SYS_OPEN:    {"open", []target{{dirfd: cwd, path: 0, follow: followOpen, flags: 1}}},
	unix.SYS_CREAT:   {"creat", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_MKDIR:   {"mkdir", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_MKNOD:   {"mknod", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_SYMLINK: {"symlink", []target{{dirfd: cwd, path: 1, flags: none}}},
	unix.SYS_LINK:    {"link", []target{{dirfd: cwd, path: 0, flags: none}, {dirfd: cwd, path: 1, flags: none}}},
	unix.SYS_RENAME:  {"rename", []target{{dirfd: cwd, path: 0, flags: none}, {dirfd: cwd, path: 1, flags: none}}},
	unix.SYS_UNLINK:  {"unlink", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_RMDIR:   {"rmdir", []target{{dirfd: cwd, path: 0, flags: none}}},
	unix.SYS_CHMOD:   {"chmod", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_CHOWN:   {"chown", []target{{dirfd: cwd, path: 0, follow: followAlways, flags: none}}},
	unix.SYS_LCHOWN:  {"lchown", []target{{dirfd: cwd, path: 0, flags: none}}},
}
