package lima

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/untrusted"
)

// Files Lima 1.2.2 writes in an instance directory (pkg/store/filenames).
const (
	fileLimaYAML   = "lima.yaml"
	fileHostAgent  = "ha.pid"
	fileSSHConfig  = "ssh.config"
	driverPIDSufix = ".pid" // "<vmType>.pid": qemu.pid, vz.pid, krunkit.pid
)

// Guest console logs in an instance directory (Lima's pkg/store/filenames).
// Each driver truncates its log at every start, so it holds the current boot.
const (
	// fileSerialLog is qemu's default serial port: ttyS0 on x86_64, ttyAMA0
	// on aarch64, the console of the cloud images Lima boots.
	fileSerialLog = "serial.log"
	// fileSerialVirtioLog is the virtio console (hvc0): the only console of
	// vz, which attaches it with VZFileSerialPortAttachment (append false).
	fileSerialVirtioLog = "serialv.log"
)

// ConsoleLog is the path of the log that holds the boot messages (cloud-init's
// output, with Lima's "Failed to execute" line for a failed provision script)
// of instance name under the VM driver vmType.
func ConsoleLog(limaHome, name, vmType string) string {
	file := fileSerialLog
	if vmType == "vz" {
		file = fileSerialVirtioLog
	}
	return filepath.Join(limaHome, name, file)
}

// driverTypes are the VM drivers whose pid file ReadInstanceDir looks for, in order.
var driverTypes = []string{"qemu", "vz", "krunkit"}

// InstanceState is the status of an instance read from its directory without running limactl.
type InstanceState struct {
	Name         string
	Dir          string
	Status       Status // Running, Stopped or Broken
	HostAgentPID int    // 0 when not running
	DriverPID    int    // 0 when not running
	VMType       string // driver whose pid file was found; "" when none
	Reason       string // why Broken
}

// ReadInstanceDir reads an instance's status from the pid files in LIMA_HOME/NAME, the way limactl does
// (ha.pid for the host agent, <vmType>.pid for the driver; a pid whose process is gone counts as absent),
// but without spawning limactl or touching the hostagent socket, so it is cheap enough to poll.
// Unlike limactl it never removes a stale pid file. The error wraps ErrNotFound when the instance does not exist.
func ReadInstanceDir(limaHome, name string) (InstanceState, error) {
	if err := validName(name); err != nil {
		return InstanceState{}, fmt.Errorf("reading lima instance dir: %w", err)
	}
	dir := filepath.Join(limaHome, name)
	st := InstanceState{Name: name, Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, fileLimaYAML)); err != nil {
		var lerr error
		if _, lerr = os.Lstat(filepath.Join(dir, fileLimaYAML)); errors.Is(err, fs.ErrNotExist) && errors.Is(lerr, fs.ErrNotExist) {
			return st, fmt.Errorf("reading lima instance dir %s: %w", dir, ErrNotFound)
		}
		if lerr != nil {
			return st, fmt.Errorf("reading lima instance dir %s: %w", dir, err)
		}
		// The instance is there but its config cannot be read (a
		// symbolic link loop or a dangling one, no permission): broken,
		// with the reason, never "missing".
		st.Status, st.Reason = StatusBroken, fmt.Sprintf("%s: %v", fileLimaYAML, errors.Unwrap(err))
		if errors.Unwrap(err) == nil {
			st.Reason = err.Error()
		}
		return st, nil
	}
	var problems []string
	ha, err := readLivePID(filepath.Join(dir, fileHostAgent))
	if err != nil {
		problems = append(problems, err.Error())
	}
	st.HostAgentPID = ha
	for _, t := range driverTypes {
		pid, err := readLivePID(filepath.Join(dir, t+driverPIDSufix))
		if err != nil {
			problems = append(problems, err.Error())
		}
		if pid > 0 {
			st.DriverPID, st.VMType = pid, t
			break
		}
	}
	switch {
	case len(problems) > 0:
		st.Status, st.Reason = StatusBroken, strings.Join(problems, "; ")
	case st.HostAgentPID > 0 && st.DriverPID > 0:
		st.Status = StatusRunning
	case st.HostAgentPID == 0 && st.DriverPID == 0:
		st.Status = StatusStopped
	case st.HostAgentPID > 0:
		st.Status, st.Reason = StatusBroken, "host agent is running but the VM driver is not"
	default:
		st.Status, st.Reason = StatusBroken, st.VMType+" driver is running but the host agent is not"
	}
	return st, nil
}

// readLivePID returns the pid in path, or 0 when the file is absent or its
// process is gone. The pid file is read as a regular file of a few bytes
// without blocking (untrusted.ReadPID): a FIFO, /dev/zero or a sparse
// giant in its place is a problem named in Reason, never a hang or a read
// of gigabytes.
func readLivePID(path string) (int, error) {
	pid, err := untrusted.ReadPID(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, err // names the file
	}
	if !processAlive(pid) {
		return 0, nil
	}
	return pid, nil
}

// SSHPorts returns the host ports of the SSH forwards of every instance
// under limaHome, read from the "Port" lines of their ssh.config files
// (Lima writes one per start). Unreadable or missing files are skipped: it
// is a deny-list for the egress broker, so it returns what it can.
func SSHPorts(limaHome string) []int {
	matches, _ := filepath.Glob(filepath.Join(limaHome, "*", fileSSHConfig))
	var out []int
	for _, m := range matches {
		b, err := untrusted.ReadFile(m, 64<<10)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && strings.EqualFold(f[0], "Port") {
				if p, err := strconv.Atoi(f[1]); err == nil && p > 0 && p < 65536 {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// HostAgentLog is the log of Lima's host agent for instance name: JSON
// lines, with a line at each step of a start (core/progress follows it).
func HostAgentLog(limaHome, name string) string {
	return filepath.Join(limaHome, name, "ha.stderr.log")
}
