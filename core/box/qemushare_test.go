package box

import (
	"os"
	"path/filepath"
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
