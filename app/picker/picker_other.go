//go:build !linux && !darwin

package picker

// New returns a picker that is never available.
func New() Picker { return Chain{} }
