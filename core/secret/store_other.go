//go:build !linux && !darwin

package secret

import (
	"context"
	"errors"
	"runtime"
)

// Default returns a store that reports ErrUnavailable: corral supports the
// keychain on macOS and the Secret Service on Linux only.
func Default() Store { return unsupported{} }

type unsupported struct{}

var _ Store = unsupported{}

var errUnsupported = errors.New("no secret store support on " + runtime.GOOS)

func (unsupported) Get(_ context.Context, service, account string) (string, error) {
	return "", Unavailable(service, account, errUnsupported, "set the secret in the environment instead")
}

func (unsupported) Set(_ context.Context, service, account, _ string) error {
	return Unavailable(service, account, errUnsupported, "")
}

func (unsupported) Delete(_ context.Context, service, account string) error {
	return Unavailable(service, account, errUnsupported, "")
}
