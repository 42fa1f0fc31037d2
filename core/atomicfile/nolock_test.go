package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestNoLockWithoutDeadline: no flock in corral's non-test code blocks: a
// blocking flock cannot be given up, and a stopped holder (SIGSTOP, a
// debugger, a closed lid) would hold the command for ever. Every lock
// goes through Flock or TryFlock (LOCK_NB, with a deadline), or is a
// non-blocking try or an unlock of its own.
func TestNoLockWithoutDeadline(t *testing.T) {
	root := filepath.Join("..", "..")
	call := regexp.MustCompile(`\b(?:unix|syscall)\.Flock\((.*)`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); strings.HasPrefix(n, ".") && path != root || n == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range call.FindAllStringSubmatch(line, -1) {
				args := m[1]
				if strings.Contains(args, "LOCK_NB") || strings.Contains(args, "LOCK_UN") || strings.HasSuffix(path, filepath.Join("atomicfile", "flock.go")) {
					continue
				}
				t.Errorf("%s:%d: a blocking flock: %s (use atomicfile.Flock or TryFlock)", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
