package procinfo

import (
	"fmt"
	"os"
	"strconv"
)

// Argv returns the argv of process pid.
func Argv(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return parseCmdline(b), nil
}

// Read returns the identity of process pid.
func Read(pid int) (Identity, error) {
	argv, err := Argv(pid)
	if err != nil {
		return Identity{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Identity{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	start, err := parseStatStart(stat)
	if err != nil {
		return Identity{}, fmt.Errorf("reading process %d: %w", pid, err)
	}
	return Identity{Argv: argv, Start: start}, nil
}

// Environ returns the environment of process pid (the user's own
// processes only: /proc/PID/environ is private to the owner).
func Environ(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	return parseCmdline(b), nil
}

// PIDs lists the running processes.
func PIDs() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out, nil
}
