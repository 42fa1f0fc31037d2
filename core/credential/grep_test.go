package credential

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// grepRepo lists the non-test Go files of the module that contain s
// (outside core/credential itself, and outside function declarations).
func grepRepo(t *testing.T, s string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || strings.Contains(p, "/core/credential/") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, s) && !strings.HasPrefix(strings.TrimSpace(line), "func ") && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				out = append(out, filepath.ToSlash(p))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
