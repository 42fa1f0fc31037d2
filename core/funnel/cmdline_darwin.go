package funnel

import (
	"bytes"
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// cmdline returns the argv of process pid from kern.procargs2: argc (int32),
// the exec path, NUL padding, then argc NUL-terminated arguments.
func cmdline(pid int) ([]string, error) {
	b, err := unix.SysctlRaw("kern.procargs2", pid)
	if err != nil {
		return nil, err
	}
	return parseProcargs2(b)
}

func parseProcargs2(b []byte) ([]string, error) {
	if len(b) < 4 {
		return nil, errors.New("short kern.procargs2")
	}
	argc := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil, errors.New("malformed kern.procargs2")
	}
	b = b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	args := make([]string, 0, argc)
	for len(args) < argc {
		i := bytes.IndexByte(b, 0)
		if i < 0 {
			return nil, errors.New("malformed kern.procargs2")
		}
		args = append(args, string(b[:i]))
		b = b[i+1:]
	}
	return args, nil
}
