package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCatchesBrokenDarwinFile is the must-fail self-test: a darwin-only
// file with a wrong systray call must make darwincheck exit 1.
func TestCatchesBrokenDarwinFile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the checker")
	}
	cmd := exec.Command("go", "run", ".", "-goos", "darwin", "-goarch", "arm64",
		"github.com/corral-dev/corral/cmd/darwincheck/testdata/broken")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("darwincheck passed a broken darwin file:\n%s", out)
	}
	if !strings.Contains(string(out), "broken_darwin.go") {
		t.Errorf("error does not name the file:\n%s", out)
	}
}
