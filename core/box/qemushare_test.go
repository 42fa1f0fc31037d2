package box

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Lima looks for firmware in dir(dir(qemu))/share/qemu; with the shim in
// run/bin that is run/share/qemu, which must lead to the real qemu's.
func TestLinkQemuShare(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	fw := filepath.Join(t.TempDir(), "share", "qemu")
	if err := os.MkdirAll(fw, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fw, "edk2-aarch64-code.fd"), []byte("fw"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := linkQemuShare(run, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(run, "share")); !os.IsNotExist(err) {
		t.Fatalf("no target: something was created: %v", err)
	}
	for range 2 { // the second run finds the link in place
		if err := linkQemuShare(run, fw); err != nil {
			t.Fatal(err)
		}
	}
	shim := filepath.Join(run, "bin", "qemu-system-aarch64")
	limaLooksAt := filepath.Join(filepath.Dir(filepath.Dir(shim)), "share", "qemu", "edk2-aarch64-code.fd")
	if b, err := os.ReadFile(limaLooksAt); err != nil || string(b) != "fw" {
		t.Fatalf("reading %s: %q, %v", limaLooksAt, b, err)
	}
	// A new qemu (brew upgrade moved it) replaces the link.
	fw2 := t.TempDir()
	if err := linkQemuShare(run, fw2); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.Readlink(filepath.Join(run, "share", "qemu")); got != fw2 {
		t.Errorf("link = %q, want %q", got, fw2)
	}
}

// The cask's corral on PATH is a link to the app bundle's binary: both
// give the same shim target, so the CLI and the app stop flipping the link.
func TestShimTargetResolvesLinks(t *testing.T) {
	d := t.TempDir()
	bundle := filepath.Join(d, "Corral.app", "Contents", "MacOS")
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(bundle, "corral")
	if err := os.WriteFile(exe, nil, 0o700); err != nil {
		t.Fatal(err)
	}
	cask := filepath.Join(d, "corral")
	if err := os.Symlink(exe, cask); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(exe)
	if a, b := shimTarget(cask), shimTarget(exe); a != real || b != real {
		t.Errorf("shimTarget: cask %q, bundle %q, want %q", a, b, real)
	}
	if got := shimTarget(filepath.Join(d, "gone")); got != filepath.Join(d, "gone") {
		t.Errorf("shimTarget of a missing file = %q", got)
	}
}

// Concurrent replacements of one link each use their own temporary name:
// all succeed and leave no temporary behind.
func TestReplaceLinkConcurrent(t *testing.T) {
	d := t.TempDir()
	link := filepath.Join(d, "bin", "qemu-system-aarch64")
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() { errs <- replaceLink(link, fmt.Sprintf("/target/%d", i%2)) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(link))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want only the link", names)
	}
}
