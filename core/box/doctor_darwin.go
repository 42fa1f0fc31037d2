package box

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// vzAvailable reports whether Lima's vz driver can run: it needs macOS 13
// (Virtualization.framework's Linux guest support that Lima uses).
func vzAvailable() (bool, string) {
	v, err := unix.Sysctl("kern.osproductversion")
	if err != nil {
		return false, "macOS version unknown: " + err.Error()
	}
	major, _ := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if major < 13 {
		return false, "macOS " + v + " is older than 13, which vz needs"
	}
	return true, "macOS " + v
}
