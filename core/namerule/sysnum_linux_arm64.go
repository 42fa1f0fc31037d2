package namerule

import "golang.org/x/sys/unix"

// auditArch is the only ABI the filter lets through (a 32-bit task would
// reach other numbers).
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

// legacyCalls: arm64 has only the *at forms (and the xattr calls, which
// are in commonCalls).
var legacyCalls = map[uint32]call{}
