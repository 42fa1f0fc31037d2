//go:build !linux && !darwin

package procinfo

import (
	"errors"
	"runtime"
)

var errUnsupported = errors.New("reading a process's identity is not supported on " + runtime.GOOS)

// Argv is not supported here.
func Argv(int) ([]string, error) { return nil, errUnsupported }

// Read is not supported here.
func Read(int) (Identity, error) { return Identity{}, errUnsupported }

// Environ is not supported here.
func Environ(int) ([]string, error) { return nil, errUnsupported }

// PIDs is not supported here.
func PIDs() ([]int, error) { return nil, errUnsupported }
