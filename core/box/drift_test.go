package box

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestDriftFollowsTheConfig(t *testing.T) {
	s, r := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	m, err := s.Up(context.Background(), r, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Drift(m); err != nil || changed {
		t.Fatalf("right after up: drift %t, %v", changed, err)
	}
	// A host layer changes something the template carries.
	if err := os.WriteFile(s.Layout.GlobalConfig(), []byte("network = \"full\"\ngolden = false\ncpus = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Drift(m); err != nil || !changed {
		t.Errorf("after a config change: drift %t, %v", changed, err)
	}
	// A project that is gone is an error naming the box, not "no drift".
	gone := m
	gone.Project = filepath.Join(t.TempDir(), "gone")
	if _, err := s.Drift(gone); err == nil {
		t.Error("drift of a box whose project is gone: no error")
	}
}

func TestMountsReadTheInstance(t *testing.T) {
	s, _ := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	dir := filepath.Join(s.Layout.LimaHome(), "web-1a2b3c")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	yaml := "vmType: qemu\nmounts:\n- location: /src/web\n  mountPoint: /src/web\n  writable: true\n"
	if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	ms, err := s.Mounts("web-1a2b3c")
	if err != nil || len(ms) != 1 || ms[0].Location != "/src/web" || !ms[0].Writable {
		t.Errorf("mounts %+v, %v", ms, err)
	}
	if _, err := s.Mounts("missing-000000"); err == nil {
		t.Error("mounts of a box with no instance: no error")
	}
}
