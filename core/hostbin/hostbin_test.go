package hostbin

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func tool(t *testing.T, dir, name string, mode fs.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// Finder gives an app PATH=/usr/bin:/bin:/usr/sbin:/sbin: limactl from
// Homebrew must still be found, and PATH must win when it has one.
func TestLookupOrder(t *testing.T) {
	root := t.TempDir()
	finderPath := filepath.Join(root, "usr/bin") + ":" + filepath.Join(root, "bin")
	brewARM, brewIntel, ports := filepath.Join(root, "opt/homebrew/bin"), filepath.Join(root, "usr/local/bin"), filepath.Join(root, "opt/local/bin")
	dirs := []string{brewARM, brewIntel, ports}

	intel := tool(t, brewIntel, "limactl", 0o755)
	got, err := Lookup("limactl", finderPath, dirs, nil)
	if err != nil || got != intel {
		t.Fatalf("Lookup = %q, %v; want %q", got, err, intel)
	}
	arm := tool(t, brewARM, "limactl", 0o755)
	if got, _ := Lookup("limactl", finderPath, dirs, nil); got != arm {
		t.Fatalf("Lookup = %q; want the first well-known dir %q", got, arm)
	}
	own := tool(t, filepath.Join(root, "home/bin"), "limactl", 0o755)
	if got, _ := Lookup("limactl", filepath.Join(root, "home/bin")+":"+finderPath, dirs, nil); got != own {
		t.Fatalf("Lookup = %q; PATH must win: want %q", got, own)
	}
}

func TestLookupSkipsWhatCannotRun(t *testing.T) {
	root := t.TempDir()
	a, b, c := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")
	tool(t, a, "gh", 0o644)                                            // not executable
	if err := os.MkdirAll(filepath.Join(b, "gh"), 0o755); err != nil { // a directory
		t.Fatal(err)
	}
	want := tool(t, c, "gh", 0o755)
	got, err := Lookup("gh", "relative/dir:"+a+":"+b, []string{c}, nil)
	if err != nil || got != want {
		t.Fatalf("Lookup = %q, %v; want %q", got, err, want)
	}
}

func TestLookupSkipFunc(t *testing.T) {
	root := t.TempDir()
	shim := tool(t, filepath.Join(root, "shim"), "qemu-system-x86_64", 0o755)
	real := tool(t, filepath.Join(root, "real"), "qemu-system-x86_64", 0o755)
	skip := func(p string, _ fs.FileInfo) bool { return p == shim }
	got, err := Lookup("qemu-system-x86_64", filepath.Dir(shim), []string{filepath.Dir(real)}, skip)
	if err != nil || got != real {
		t.Fatalf("Lookup = %q, %v; want %q", got, err, real)
	}
}

func TestLookupNotFound(t *testing.T) {
	_, err := Lookup("glab", "/nonexistent-a", []string{"/nonexistent-b", "/nonexistent-c"}, nil)
	if !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v, want exec.ErrNotFound", err)
	}
	if !strings.Contains(err.Error(), "/nonexistent-b, /nonexistent-c") {
		t.Fatalf("err = %v, want the searched dirs named", err)
	}
}

func TestLookupWithSlash(t *testing.T) {
	p := tool(t, t.TempDir(), "limactl", 0o755)
	if got, err := Lookup(p, "", nil, nil); err != nil || got != p {
		t.Fatalf("Lookup(%q) = %q, %v", p, got, err)
	}
	if _, err := Lookup(p+"-missing", "", nil, nil); !errors.Is(err, exec.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestSearchPath(t *testing.T) {
	got := SearchPath("/usr/bin:/bin::rel:/usr/local/bin", []string{"/opt/homebrew/bin", "/usr/local/bin", "/opt/local/bin"})
	want := "/usr/bin:/bin:/usr/local/bin:/opt/homebrew/bin:/opt/local/bin"
	if got != want {
		t.Fatalf("SearchPath = %q, want %q", got, want)
	}
}
