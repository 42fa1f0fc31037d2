// Package procinfo reads who a process is, on Linux and macOS alike: its
// argv and its start time. corral uses the pair to recognise a process it
// started earlier (a box's broker) before signalling it: a saved PID alone
// may belong to any process after a reboot or a PID wrap.
//
// Linux reads /proc/PID/cmdline and the starttime field of /proc/PID/stat;
// macOS reads the kern.procargs2 and kern.proc.pid sysctls. Neither needs
// privilege for the user's own processes.
package procinfo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Identity is what a process is: its argv (argv[0] first) and its start
// time, an opaque number that is the same on every read for one process and
// differs for a later process with the same PID (clock ticks since boot on
// Linux, nanoseconds since the epoch on macOS). Compare it, never show it.
type Identity struct {
	Argv  []string
	Start int64
}

// Same reports whether a process read now is the one recorded as want: the
// start times match. A zero recorded start (state written before start
// times were kept) matches any, leaving the argv check alone to decide.
func Same(now Identity, wantStart int64) bool {
	return wantStart == 0 || now.Start == wantStart
}

// parseProcargs2 reads macOS's kern.procargs2: argc (int32, little-endian
// on both Mac architectures), the exec path, NUL padding, then argc
// NUL-terminated arguments (then the environment, see parseProcargs2Env).
func parseProcargs2(b []byte) ([]string, error) {
	args, _, err := splitProcargs2(b)
	return args, err
}

// parseProcargs2Env returns the environment that follows the arguments in
// kern.procargs2: NUL-terminated strings up to the first empty one.
func parseProcargs2Env(b []byte) ([]string, error) {
	_, rest, err := splitProcargs2(b)
	if err != nil {
		return nil, err
	}
	var env []string
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, 0)
		if i <= 0 {
			break
		}
		env = append(env, string(rest[:i]))
		rest = rest[i+1:]
	}
	return env, nil
}

// splitProcargs2 returns the arguments and the bytes after them.
func splitProcargs2(b []byte) ([]string, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errors.New("short kern.procargs2")
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, nil, errors.New("malformed kern.procargs2")
	}
	b = b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	if argc < 0 || argc > len(b) {
		return nil, nil, errors.New("malformed kern.procargs2: bad argc")
	}
	args := make([]string, 0, argc)
	for len(args) < argc {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, nil, errors.New("malformed kern.procargs2")
		}
		args = append(args, string(b[:i]))
		b = b[i+1:]
	}
	return args, b, nil
}

// parseCmdline splits /proc/PID/cmdline.
func parseCmdline(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// parseStatStart returns field 22 (starttime) of /proc/PID/stat. The
// second field, the command name in parentheses, may itself hold spaces
// and parentheses, so the fields are counted after its last ')'.
func parseStatStart(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc stat")
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so starttime (field 22) is f[19].
	if len(f) < 20 {
		return 0, errors.New("malformed /proc stat: too few fields")
	}
	v, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed /proc stat starttime: %w", err)
	}
	return v, nil
}
