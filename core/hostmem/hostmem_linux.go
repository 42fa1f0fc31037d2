package hostmem

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
)

// VMProcess returns the PID of the process that holds a box's guest memory.
// On Linux only QEMU exists: its pid is in <instanceDir>/qemu.pid.
func (s *Scan) VMProcess(instanceDir, vmType string) (int, error) {
	if vmType != VMTypeQEMU && vmType != "" {
		return 0, fmt.Errorf("finding vm process of %s: vm type %q is not supported on Linux", instanceDir, vmType)
	}
	return qemuProcess(instanceDir)
}

// Scan is one look at the host's VM processes, shared by every box of one
// refresh. On Linux each box's qemu.pid names its process, so there is
// nothing to share.
type Scan struct{}

// NewScan returns a Scan.
func NewScan() *Scan { return &Scan{} }

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// ForPID reads the process's PSS + SwapPss from /proc/PID/smaps_rollup
// (readable for the user's own processes) and its VmHWM from
// /proc/PID/status.
func ForPID(pid int) (Usage, error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)

	b, err := readProc(pid, "smaps_rollup", bp)
	if err != nil {
		return Usage{}, err
	}
	pss, ok1 := fieldKB(b, "Pss:")
	swap, ok2 := fieldKB(b, "SwapPss:")
	if !ok1 {
		return Usage{}, fmt.Errorf("reading memory of pid %d: no Pss in smaps_rollup", pid)
	}
	if !ok2 {
		swap = 0 // kernels before 4.14 lack SwapPss
	}
	u := Usage{PID: pid, Bytes: (pss + swap) * 1024, Source: SourcePSS}

	b, err = readProc(pid, "status", bp)
	if err != nil {
		return Usage{}, err
	}
	if hwm, ok := fieldKB(b, "VmHWM:"); ok {
		u.PeakBytes = hwm * 1024
	}
	return u, nil
}

func readProc(pid int, name string, bp *[]byte) ([]byte, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/" + name
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading memory of pid %d: %w", pid, ErrNotRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("reading memory of pid %d: %w", pid, err)
	}
	defer f.Close()
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	*bp = b
	return b, nil
}

// fieldKB finds a line "Name:   1234 kB" and returns 1234.
func fieldKB(b []byte, name string) (uint64, bool) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if !bytes.HasPrefix(line, []byte(name)) {
			continue
		}
		f := bytes.Fields(line[len(name):])
		if len(f) == 0 {
			return 0, false
		}
		v, err := strconv.ParseUint(string(f[0]), 10, 64)
		return v, err == nil
	}
	return 0, false
}
