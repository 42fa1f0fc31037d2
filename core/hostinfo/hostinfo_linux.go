package hostinfo

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func totalMemory() (uint64, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, fmt.Errorf("reading host memory: %w", err)
	}
	return uint64(si.Totalram) * uint64(si.Unit), nil
}

// availableMemory reads MemAvailable from /proc/meminfo (Linux 3.14+).
func availableMemory() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("reading available memory: %w", err)
	}
	return memAvailable(b)
}

// memAvailable parses the MemAvailable line of /proc/meminfo.
func memAvailable(b []byte) (uint64, error) {
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "MemAvailable:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			break
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > 1<<40 {
			break
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("reading available memory: no MemAvailable line in /proc/meminfo")
}
