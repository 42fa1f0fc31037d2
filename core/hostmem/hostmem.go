// Package hostmem measures how much host memory a box's VM process uses, for
// the menu-bar app's memory display and for idle decisions. The app polls it
// every few seconds, so ForPID is a couple of small procfs reads on Linux and
// one proc_pid_rusage call on macOS.
//
// The numbers are what the host pays for the VM, not what the guest thinks it
// uses: on Linux the proportional set size plus proportional swap (shared
// pages split between sharers), on macOS the physical footprint that Activity
// Monitor shows.
package hostmem

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/corral-dev/corral/core/untrusted"
)

// Usage is one reading of a process's host memory.
type Usage struct {
	PID int
	// Bytes is the current usage.
	Bytes uint64
	// PeakBytes is the highest usage seen over the process's life, 0 if
	// unknown. On Linux it is the resident-set peak (VmHWM), which counts
	// shared pages in full and so is not the peak of Bytes.
	PeakBytes uint64
	// Source names the measure behind Bytes: SourcePSS or SourceFootprint.
	Source string
}

// Sources of Usage.Bytes.
const (
	SourcePSS       = "pss+swappss"    // Linux: Pss + SwapPss from smaps_rollup
	SourceFootprint = "phys_footprint" // macOS: rusage_info_v4 ri_phys_footprint
)

// VM types, as in Lima's vmType.
const (
	VMTypeQEMU = "qemu"
	VMTypeVZ   = "vz"
)

// ErrNotRunning means the box's VM process was not found.
var ErrNotRunning = errors.New("vm process not running")

// qemuPIDFile is the pid file QEMU writes in a Lima instance directory
// (qemu -pidfile <inst>/qemu.pid; Lima v1.2.2 pkg/driver/qemu/qemu.go and
// filenames.PIDFile(vmType)). Lima removes it when QEMU exits.
func qemuPIDFile(instanceDir string) string {
	return filepath.Join(instanceDir, VMTypeQEMU+".pid")
}

// qemuProcess reads the QEMU pid file and checks the process exists.
func qemuProcess(instanceDir string) (int, error) {
	path := qemuPIDFile(instanceDir)
	pid, err := untrusted.ReadPID(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("finding qemu process of %s: %w", instanceDir, ErrNotRunning)
	}
	if err != nil {
		return 0, fmt.Errorf("finding qemu process: %w", err)
	}
	// Signal 0 checks existence; EPERM means it exists but is not ours.
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, fmt.Errorf("finding qemu process of %s: pid %d from %s: %w", instanceDir, pid, path, ErrNotRunning)
	}
	return pid, nil
}

// VMProcess returns the PID of the process that holds a box's guest memory
// (see Scan.VMProcess); callers looking at several boxes share one Scan.
func VMProcess(instanceDir, vmType string) (int, error) {
	return NewScan().VMProcess(instanceDir, vmType)
}
