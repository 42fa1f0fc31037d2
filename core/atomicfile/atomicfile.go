// Package atomicfile writes files so that readers see either the old or the
// new content, never a partial one: temp file in the same directory, fsync,
// rename, fsync of the directory. Every corral state file goes through it.
//
// A writer killed between creating its temp file and the rename leaves the
// temp behind. Such orphans are removed by the next write of the same file
// and by `corral gc` (IsTemp, OrphanAge): a temp is an orphan only once it
// is older than any write takes, so a concurrent writer's temp is never
// taken for one.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// OrphanAge is how old a temp file must be to count as an orphan. A write
// takes milliseconds; the margin covers a stopped laptop and a slow disk.
const OrphanAge = 10 * time.Minute

// tempInfix separates a file's name from the random suffix of its temps:
// the temp of "x.json" is ".x.json.tmp-123456".
const tempInfix = ".tmp-"

// IsTemp reports whether a file name is one of WriteFile's temp files.
func IsTemp(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	return strings.HasPrefix(name, ".") && i > 1 && i+len(tempInfix) < len(name)
}

// tempOf reports whether name is a temp file of the file base.
func tempOf(name, base string) bool {
	return strings.HasPrefix(name, "."+base+tempInfix) && IsTemp(name)
}

// RemoveOrphan removes path if it is a temp file older than OrphanAge at
// now, and reports whether it did.
func RemoveOrphan(path string, now time.Time) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || !IsTemp(filepath.Base(path)) || now.Sub(fi.ModTime()) < OrphanAge {
		return false
	}
	return os.Remove(path) == nil
}

// RemoveOrphans removes the temp files in dir older than OrphanAge at now,
// for base's temps only when base is not empty, and returns the paths it
// removed.
func RemoveOrphans(dir, base string, now time.Time) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range ents {
		n := e.Name()
		if !e.Type().IsRegular() || !IsTemp(n) || (base != "" && !tempOf(n, base)) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < OrphanAge {
			continue
		}
		if os.Remove(filepath.Join(dir, n)) == nil {
			removed = append(removed, filepath.Join(dir, n))
		}
	}
	return removed
}

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
	RemoveOrphans(dir, filepath.Base(path), time.Now())
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempInfix+"*")
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
