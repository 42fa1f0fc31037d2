package qemu

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeExe(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindQemuSkipsSelf(t *testing.T) {
	d := t.TempDir()
	self := filepath.Join(d, "corral", "corral")
	writeExe(t, self)
	// corral installed as the wrapper under qemu's own name, first on PATH (a symlink and a hard link).
	wrapDir := filepath.Join(d, "wrap")
	if err := os.MkdirAll(wrapDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(wrapDir, "qemu-system-x86_64")); err != nil {
		t.Fatal(err)
	}
	linkDir := filepath.Join(d, "link")
	if err := os.MkdirAll(linkDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(self, filepath.Join(linkDir, "qemu-system-x86_64")); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(d, "usr", "bin", "qemu-system-x86_64")
	writeExe(t, real)
	// Not executable: skipped.
	noexec := filepath.Join(d, "noexec", "qemu-system-x86_64")
	writeExe(t, noexec)
	if err := os.Chmod(noexec, 0o644); err != nil {
		t.Fatal(err)
	}

	path := wrapDir + ":relative/dir:" + linkDir + ":" + filepath.Dir(noexec) + ":" + filepath.Dir(real)
	got, err := findQemu("amd64", path, self, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != real {
		t.Errorf("findQemu = %q, want %q", got, real)
	}

	// Fallback dirs are searched after PATH.
	got, err = findQemu("x86_64", wrapDir, self, []string{filepath.Dir(real)})
	if err != nil || got != real {
		t.Errorf("findQemu with fallback = %q, %v; want %q", got, err, real)
	}

	if _, err := findQemu("x86_64", wrapDir+":"+linkDir, self, nil); !errors.Is(err, ErrQemuNotFound) {
		t.Errorf("only corral on PATH: err = %v, want ErrQemuNotFound", err)
	}
	if _, err := findQemu("aarch64", filepath.Dir(real), self, nil); !errors.Is(err, ErrQemuNotFound) {
		t.Errorf("wrong arch: err = %v, want ErrQemuNotFound", err)
	}
	if _, err := findQemu("sparc", filepath.Dir(real), self, nil); err == nil {
		t.Error("unsupported arch: no error")
	}
}

func TestQemuArch(t *testing.T) {
	for in, want := range map[string]string{"amd64": "x86_64", "x86_64": "x86_64", "arm64": "aarch64", "aarch64": "aarch64"} {
		if got, err := QemuArch(in); err != nil || got != want {
			t.Errorf("QemuArch(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// Homebrew: bin/qemu-system-aarch64 links into the Cellar; share/qemu is
// found beside the link's prefix, or beside the resolved binary's.
func TestFirmwareDir(t *testing.T) {
	d := t.TempDir()
	cellar := filepath.Join(d, "Cellar", "qemu", "10.1", "bin", "qemu-system-aarch64")
	writeExe(t, cellar)
	link := filepath.Join(d, "bin", "qemu-system-aarch64")
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(cellar, link); err != nil {
		t.Fatal(err)
	}
	if got := FirmwareDir(link); got != "" {
		t.Errorf("no share dir anywhere: FirmwareDir = %q", got)
	}
	cellarShare := filepath.Join(d, "Cellar", "qemu", "10.1", "share", "qemu")
	if err := os.MkdirAll(cellarShare, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FirmwareDir(link); got != cellarShare {
		t.Errorf("FirmwareDir = %q, want the resolved prefix %q", got, cellarShare)
	}
	share := filepath.Join(d, "share", "qemu")
	if err := os.MkdirAll(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if got := FirmwareDir(link); got != share {
		t.Errorf("FirmwareDir = %q, want the link's prefix %q", got, share)
	}
}
