//go:build !linux || !(amd64 || arm64)

package namerule

import (
	"errors"
	"fmt"
	"io"
)

// Supported reports whether this build can enforce the rule: only Linux
// (qemu's 9p server runs in corral's namespace there); elsewhere the
// event-driven guard reports instead (core/gitshadow).
const Supported = false

// ErrUnsupported is Start's error where the rule cannot be enforced.
var ErrUnsupported = errors.New("the name rule needs Linux on amd64 or arm64")

// Start fails: no seccomp here.
func Start(exe string, rule Rule, stderr io.Writer) error { return ErrUnsupported }

// Main fails: no seccomp here.
func Main(args []string, stderr io.Writer, record func(Refusal)) int {
	fmt.Fprintf(stderr, "corral %s: %v\n", Command, ErrUnsupported)
	return 1
}

// Refusal is one refused call.
type Refusal struct {
	Call, At, Why string
}

// MountID fails: no statx here.
func MountID(p string) (uint64, error) { return 0, ErrUnsupported }

// Verify fails: no seccomp here.
func Verify(pid int) (int, error) { return 0, ErrUnsupported }
