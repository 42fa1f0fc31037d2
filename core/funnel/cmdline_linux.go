package funnel

import (
	"os"
	"strconv"
	"strings"
)

// cmdline returns the argv of process pid.
func cmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	s := strings.TrimSuffix(string(b), "\x00")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\x00"), nil
}
