package hostmem

// This file is type-checked on Linux (darwincheck) but has not been built or
// run on macOS yet; the C below is not compiled by that check. The facts it
// relies on are in the team's macOS notes: rusage_info_v4 offsets, the VM
// XPC process, and mapping it to an instance by its open disk image.

/*
#include <errno.h>
#include <libproc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/proc_info.h>
#include <sys/resource.h>

// corral_footprint reads the physical footprint (what Activity Monitor
// shows) and its lifetime peak. Same-UID processes need no privilege.
static int corral_footprint(int pid, uint64_t *cur, uint64_t *peak) {
	struct rusage_info_v4 ri;
	if (proc_pid_rusage(pid, RUSAGE_INFO_V4, (rusage_info_t *)&ri) != 0) {
		return errno ? errno : EINVAL;
	}
	*cur = ri.ri_phys_footprint;
	*peak = ri.ri_lifetime_max_phys_footprint;
	return 0;
}

// corral_has_open_under returns 1 if pid has a file open whose path starts
// with prefix, 0 if not, and -1 if its descriptors cannot be listed.
static int corral_has_open_under(int pid, const char *prefix) {
	int size = proc_pidinfo(pid, PROC_PIDLISTFDS, 0, NULL, 0);
	if (size <= 0) {
		return -1;
	}
	size += 32 * (int)PROC_PIDLISTFD_SIZE; // room for descriptors opened meanwhile
	struct proc_fdinfo *fds = malloc((size_t)size);
	if (fds == NULL) {
		return -1;
	}
	size = proc_pidinfo(pid, PROC_PIDLISTFDS, 0, fds, size);
	if (size <= 0) {
		free(fds);
		return -1;
	}
	int n = size / (int)PROC_PIDLISTFD_SIZE;
	size_t plen = strlen(prefix);
	int found = 0;
	for (int i = 0; i < n && !found; i++) {
		if (fds[i].proc_fdtype != PROX_FDTYPE_VNODE) {
			continue;
		}
		struct vnode_fdinfowithpath vi;
		int r = proc_pidfdinfo(pid, fds[i].proc_fd, PROC_PIDFDVNODEPATHINFO, &vi, (int)PROC_PIDFDVNODEPATHINFO_SIZE);
		if (r != (int)PROC_PIDFDVNODEPATHINFO_SIZE) {
			continue;
		}
		if (strncmp(vi.pvip.vip_path, prefix, plen) == 0) {
			found = 1;
		}
	}
	free(fds);
	return found;
}

// corral_pidpath returns the executable path of pid in buf, or 0 on failure.
static int corral_pidpath(int pid, char *buf, uint32_t len) {
	return proc_pidpath(pid, buf, len);
}
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/untrusted"
)

// ForPID reads the process's physical footprint (ri_phys_footprint) and its
// lifetime maximum through proc_pid_rusage(RUSAGE_INFO_V4).
func ForPID(pid int) (Usage, error) {
	var cur, peak C.uint64_t
	if e := C.corral_footprint(C.int(pid), &cur, &peak); e != 0 {
		err := syscall.Errno(e)
		if err == syscall.ESRCH {
			return Usage{}, fmt.Errorf("reading memory of pid %d: %w", pid, ErrNotRunning)
		}
		return Usage{}, fmt.Errorf("reading memory of pid %d: proc_pid_rusage: %w", pid, err)
	}
	return Usage{PID: pid, Bytes: uint64(cur), PeakBytes: uint64(peak), Source: SourceFootprint}, nil
}

// vzComm is the VM XPC service's name as the kernel keeps it (MAXCOMLEN=16).
const (
	vzComm = "com.apple.Virtua"
	vzExe  = "/com.apple.Virtualization.VirtualMachine"
)

// Scan is one look at the user's VM processes, shared by every box of one
// refresh: listing them (kern.proc.all, then each candidate's executable
// path) is the costly part, done once per Scan instead of once per vz box.
// A Scan is not safe for concurrent use.
type Scan struct {
	listed bool
	cands  []vzCand
	err    error
}

type vzCand struct {
	pid   int
	start int64
}

// NewScan returns a Scan that lists processes at its first vz lookup.
func NewScan() *Scan { return &Scan{} }

// VMProcess returns the PID of the process that holds a box's guest memory.
//
// For qemu it is the pid in <instanceDir>/qemu.pid. For vz the guest runs in
// a com.apple.Virtualization.VirtualMachine XPC process, one per VM, which is
// not the hostagent (Lima's vz.pid holds the hostagent's pid). Among the
// user's VM processes it picks the one with a file open inside instanceDir
// (its disk image: "disk" or "diffdisk"). If none can be matched that way
// and the hostagent is running, it falls back to the VM process that started
// first after the hostagent.
func (s *Scan) VMProcess(instanceDir, vmType string) (int, error) {
	switch vmType {
	case VMTypeQEMU:
		return qemuProcess(instanceDir)
	case VMTypeVZ, "":
		return s.vzProcess(instanceDir)
	default:
		return 0, fmt.Errorf("finding vm process of %s: unknown vm type %q", instanceDir, vmType)
	}
}

// vmProcesses lists the user's VM XPC processes, once per Scan.
func (s *Scan) vmProcesses() ([]vzCand, error) {
	if s.listed {
		return s.cands, s.err
	}
	s.listed = true
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		s.err = fmt.Errorf("listing processes: %w", err)
		return nil, s.err
	}
	uid := uint32(os.Getuid())
	for i := range procs {
		p := &procs[i]
		if p.Eproc.Ucred.Uid != uid || commString(p.Proc.P_comm[:]) != vzComm {
			continue
		}
		pid := int(p.Proc.P_pid)
		if !strings.HasSuffix(pidPath(pid), vzExe) {
			continue
		}
		s.cands = append(s.cands, vzCand{pid, p.Proc.P_starttime.Nano()})
	}
	return s.cands, nil
}

func (s *Scan) vzProcess(instanceDir string) (int, error) {
	dir, err := filepath.EvalSymlinks(instanceDir)
	if err != nil {
		dir = instanceDir
	}
	cands, err := s.vmProcesses()
	if err != nil {
		return 0, fmt.Errorf("finding vz process of %s: %w", instanceDir, err)
	}
	if len(cands) == 0 {
		return 0, fmt.Errorf("finding vz process of %s: %w", instanceDir, ErrNotRunning)
	}

	prefix := C.CString(dir + "/")
	defer C.free(unsafe.Pointer(prefix))
	for _, c := range cands {
		if C.corral_has_open_under(C.int(c.pid), prefix) == 1 {
			return c.pid, nil
		}
	}

	// Fallback: the VM process started first after the hostagent.
	ha, err := hostAgentStart(instanceDir)
	if err != nil {
		return 0, fmt.Errorf("finding vz process of %s: no vm process has its disk open, and %w", instanceDir, err)
	}
	best := -1
	for i, c := range cands {
		if c.start >= ha && (best < 0 || c.start < cands[best].start) {
			best = i
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("finding vz process of %s: %w", instanceDir, ErrNotRunning)
	}
	return cands[best].pid, nil
}

// hostAgentStart returns the start time (ns) of the instance's hostagent
// from <instanceDir>/ha.pid (Lima filenames.HostAgentPID).
func hostAgentStart(instanceDir string) (int64, error) {
	pid, err := untrusted.ReadPID(filepath.Join(instanceDir, "ha.pid"))
	if err != nil {
		return 0, fmt.Errorf("reading hostagent pid: %w", err)
	}
	p, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || int(p.Proc.P_pid) != pid {
		return 0, fmt.Errorf("hostagent pid %d: %w", pid, ErrNotRunning)
	}
	return p.Proc.P_starttime.Nano(), nil
}

func pidPath(pid int) string {
	buf := make([]byte, 4096) // PROC_PIDPATHINFO_MAXSIZE
	n := C.corral_pidpath(C.int(pid), (*C.char)(unsafe.Pointer(&buf[0])), C.uint32_t(len(buf)))
	if n <= 0 {
		return ""
	}
	return string(buf[:n])
}

func commString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
