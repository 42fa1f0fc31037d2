//go:build !linux && !darwin

package funnel

import (
	"errors"
	"runtime"
)

func cmdline(int) ([]string, error) {
	return nil, errors.New("reading a process's command line is not supported on " + runtime.GOOS)
}
