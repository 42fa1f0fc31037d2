//go:build !linux

package qemu

import "fmt"

// EnterNamespace is Linux only: elsewhere qemu cannot be given a private
// mount namespace, and the git directory is protected by the guest.
func EnterNamespace(self []string, env []string) error {
	return fmt.Errorf("%w on this platform", ErrNoUserNamespace)
}

// InStage is never true off Linux.
func InStage() (bool, error) { return false, nil }

// BindReadOnly is Linux only.
func BindReadOnly(paths []string) error { return fmt.Errorf("%w on this platform", ErrNoUserNamespace) }

// MountPrivate is Linux only.
func MountPrivate(mounts []PrivateMount) error {
	return fmt.Errorf("%w on this platform", ErrNoUserNamespace)
}

// ExecWithoutCaps is Linux only.
func ExecWithoutCaps(path string, argv, env []string) error {
	return fmt.Errorf("%w on this platform", ErrNoUserNamespace)
}

// CheckNamespaces is Linux only.
func CheckNamespaces() error { return fmt.Errorf("%w on this platform", ErrNoUserNamespace) }
