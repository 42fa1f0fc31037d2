package untrusted

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxPIDFile caps a pid file: a decimal pid, a newline, some slack.
const maxPIDFile = 32

// ErrBadPID is returned for a pid file that does not hold a positive
// decimal number.
var ErrBadPID = errors.New("not a pid")

// ReadPID reads the process id in the pid file at path (Lima's ha.pid and
// <driver>.pid, qemu's -pidfile): a regular file of at most 32 bytes that
// holds a positive decimal number and optional surrounding whitespace. A
// missing file returns an error that wraps fs.ErrNotExist. Errors name the
// file and quote at most those 32 bytes: a sparse file of gigabytes is
// refused by its size, not read and printed.
func ReadPID(path string) (int, error) {
	b, err := ReadFile(path, maxPIDFile)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, &FileError{Path: path, What: fmt.Sprintf("holds %q, not a pid", s), Err: ErrBadPID}
	}
	return pid, nil
}
