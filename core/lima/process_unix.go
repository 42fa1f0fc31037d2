//go:build unix

package lima

import (
	"errors"
	"syscall"
)

// processAlive sends signal 0: nil or EPERM (someone else's process) means it exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
