// Package atomicfile writes files so that readers see either the old or the
// new content, never a partial one: temp file in the same directory, fsync,
// rename, fsync of the directory. Every corral state file goes through it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// DirMode is the mode of every directory corral creates for its state.
const DirMode os.FileMode = 0o700

// FileMode is the mode of every state file corral writes.
const FileMode os.FileMode = 0o600

// WriteFile atomically replaces path with data, creating parent directories
// with DirMode. perm is applied to the new file (use FileMode for state).
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return fmt.Errorf("creating directory %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replacing %s: %w", path, err)
	}
	// The rename is durable only once the directory entry is on disk.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
