package hostinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func totalMemory() (uint64, error) {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0, fmt.Errorf("reading host memory (sysctl hw.memsize): %w", err)
	}
	return n, nil
}
