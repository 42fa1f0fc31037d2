package hostinfo

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func totalMemory() (uint64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("reading host memory: %w", err)
	}
	return uint64(si.Totalram) * uint64(si.Unit), nil
}
