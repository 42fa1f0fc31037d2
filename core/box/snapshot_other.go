//go:build !darwin

package box

import "errors"

// cloneFile is macOS only: clone snapshots are for vz boxes, and vz runs
// only on macOS (qemu boxes use Lima's snapshots).
func cloneFile(src, dst string) error {
	return errors.New("copy-on-write snapshots need macOS (clonefile)")
}
