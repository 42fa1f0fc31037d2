// Package hostinfo reports facts about the host machine that config policy
// and the memory budget depend on: its RAM and CPU count.
package hostinfo

import "runtime"

// Host is the machine's size.
type Host struct {
	MemoryBytes uint64
	CPUs        int
}

// Read returns the size of this machine.
func Read() (Host, error) {
	mem, err := totalMemory()
	if err != nil {
		return Host{}, err
	}
	return Host{MemoryBytes: mem, CPUs: runtime.NumCPU()}, nil
}

// Available is how much memory the host can give to new work without
// swapping, as its kernel estimates it: Linux's MemAvailable
// (/proc/meminfo), macOS's memory-status level (kern.memorystatus_level,
// the percentage of memory available that the memory-pressure gauge
// shows) times the RAM. The low-memory rule of the idle sweep (core/box
// LowMemorySaves) compares it with save_when_free_below.
func Available() (uint64, error) { return availableMemory() }
