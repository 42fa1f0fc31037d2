package procinfo

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Argv returns the argv of process pid from kern.procargs2.
func Argv(pid int) ([]string, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	return parseProcargs2(b)
}

// Read returns the identity of process pid: kern.procargs2 and the
// p_starttime of kern.proc.pid.
func Read(pid int) (Identity, error) {
	argv, err := Argv(pid)
	if err != nil {
		return Identity{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return Identity{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return Identity{}, fmt.Errorf("reading process %d: no such process", pid)
	}
	return Identity{Argv: argv, Start: kp.Proc.P_starttime.Nano()}, nil
}

// Environ returns the environment of process pid from kern.procargs2 (the
// user's own processes only).
func Environ(pid int) ([]string, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	return parseProcargs2Env(b)
}

// PIDs lists the user's running processes (kern.proc.all, by real uid).
func PIDs() ([]int, error) {
	procs, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil, err
	}
	uid := uint32(os.Getuid())
	var out []int
	for i := range procs {
		if procs[i].Eproc.Pcred.P_ruid == uid && procs[i].Proc.P_pid > 0 {
			out = append(out, int(procs[i].Proc.P_pid))
		}
	}
	return out, nil
}
