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
