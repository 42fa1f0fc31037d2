package box

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// limaLaunch is a Lima 1.2.2 qemu argv (core/qemu testdata) for instance
// name in limaHome: what the qemu wrapper's plan (qemuwrap.NewPlan) reads.
// core/qemuwrap's tests have the same helper.
func limaLaunch(t *testing.T, limaHome, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../qemu/testdata/lima-1.2.2-x86_64-kvm.argv")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/tmp/ce2e/lima/c1/", filepath.Join(limaHome, name)+"/")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")[1:]
}
