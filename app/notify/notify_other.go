//go:build !linux && !darwin

package notify

import "log/slog"

// New returns a Nop notifier: there is no notification backend for this
// platform.
func New(*slog.Logger) (Notifier, error) { return NewNop(), nil }
