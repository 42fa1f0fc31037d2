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

// availableMemory is kern.memorystatus_level (0-100, the percentage of
// memory available) times the RAM.
func availableMemory() (uint64, error) {
	level, err := unix.SysctlUint32("kern.memorystatus_level")
	if err != nil {
		return 0, fmt.Errorf("reading available memory (sysctl kern.memorystatus_level): %w", err)
	}
	if level > 100 {
		return 0, fmt.Errorf("reading available memory: kern.memorystatus_level %d is not a percentage", level)
	}
	total, err := totalMemory()
	if err != nil {
		return 0, err
	}
	return total / 100 * uint64(level), nil
}
