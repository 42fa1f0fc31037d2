package hostgit

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// limitChild caps a started child's address space (prlimit(2) on its
// pid). Go's exec has no rlimit field, so the caller starts the child
// with its stdin a pipe, calls this before it writes a byte, and kills
// the child if it fails: whatever the input makes git allocate happens
// under the cap.
func limitChild(pid int, addressSpace int64) error {
	lim := unix.Rlimit{Cur: uint64(addressSpace), Max: uint64(addressSpace)}
	if err := unix.Prlimit(pid, unix.RLIMIT_AS, &lim, nil); err != nil {
		return fmt.Errorf("limiting git's memory (prlimit on pid %d): %w", pid, err)
	}
	return nil
}

// childLimited says limitChild caps memory on this system.
const childLimited = true
