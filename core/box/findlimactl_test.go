package box

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFindLimactl(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "limactl")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got := findLimactl(""); got != bin {
		t.Errorf("findLimactl(\"\") = %q, want %q from PATH", got, bin)
	}
	if got := findLimactl(bin); got != bin {
		t.Errorf("findLimactl(%q) = %q", bin, got)
	}
	// An override that does not exist stays as it is: the client then
	// reports it as not installed, naming it.
	missing := filepath.Join(dir, "nope", "limactl")
	if got := findLimactl(missing); got != missing {
		t.Errorf("findLimactl(%q) = %q", missing, got)
	}
}
