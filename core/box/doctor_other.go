//go:build !darwin

package box

// vzAvailable: vz is macOS only.
func vzAvailable() (bool, string) { return false, "vz needs macOS" }
