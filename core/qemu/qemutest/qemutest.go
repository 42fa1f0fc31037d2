// Package qemutest is test-only: Lima's qemu command lines from
// core/qemu/testdata, for the tests of what reads them (the qemu wrapper's
// plan, and the lifecycle tests that check it).
package qemutest

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// LimaLaunch is a Lima 1.2.2 qemu argv (core/qemu testdata), without the
// executable, for instance name in limaHome.
func LimaLaunch(t testing.TB, limaHome, name string) []string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "lima-1.2.2-x86_64-kvm.argv"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/tmp/ce2e/lima/c1/", filepath.Join(limaHome, name)+"/")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")[1:]
}
