package lima

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestReadInstanceDir(t *testing.T) {
	live := os.Getpid()
	dead := deadPID(t)
	tests := []struct {
		name       string
		files      map[string]string
		want       Status
		wantVMType string
	}{
		{"stopped: no pid files", map[string]string{}, StatusStopped, ""},
		{"running qemu", map[string]string{"ha.pid": strconv.Itoa(live), "qemu.pid": strconv.Itoa(live) + "\n"}, StatusRunning, "qemu"},
		{"running vz", map[string]string{"ha.pid": strconv.Itoa(live), "vz.pid": strconv.Itoa(live)}, StatusRunning, "vz"},
		{"stale pid files count as stopped", map[string]string{"ha.pid": strconv.Itoa(dead), "qemu.pid": strconv.Itoa(dead)}, StatusStopped, ""},
		{"host agent without driver", map[string]string{"ha.pid": strconv.Itoa(live)}, StatusBroken, ""},
		{"driver without host agent", map[string]string{"qemu.pid": strconv.Itoa(live)}, StatusBroken, "qemu"},
		{"garbage pid", map[string]string{"ha.pid": "x", "qemu.pid": strconv.Itoa(live)}, StatusBroken, "qemu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			dir := filepath.Join(home, "box1")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			tt.files["lima.yaml"] = "vmType: qemu\n"
			for f, c := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			st, err := ReadInstanceDir(home, "box1")
			if err != nil {
				t.Fatal(err)
			}
			if st.Status != tt.want || st.VMType != tt.wantVMType || st.Dir != dir {
				t.Errorf("got %+v, want status %q vmType %q", st, tt.want, tt.wantVMType)
			}
			if (st.Status == StatusBroken) != (st.Reason != "") {
				t.Errorf("status %q with reason %q", st.Status, st.Reason)
			}
			if st.Status == StatusRunning && (st.HostAgentPID != live || st.DriverPID != live) {
				t.Errorf("pids = %d, %d; want %d", st.HostAgentPID, st.DriverPID, live)
			}
			// Stale pid files are left alone (limactl removes them; a poller must not race it).
			if _, ok := tt.files["ha.pid"]; ok {
				if _, err := os.Stat(filepath.Join(dir, "ha.pid")); err != nil {
					t.Errorf("ha.pid removed: %v", err)
				}
			}
		})
	}
}

func TestReadInstanceDirNotFound(t *testing.T) {
	home := t.TempDir()
	if _, err := ReadInstanceDir(home, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing dir: err = %v, want ErrNotFound", err)
	}
	// A directory without lima.yaml is not an instance (Lima says the same).
	if err := os.Mkdir(filepath.Join(home, "half"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadInstanceDir(home, "half"); !errors.Is(err, ErrNotFound) {
		t.Errorf("no lima.yaml: err = %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"../etc", "_config", ""} {
		if _, err := ReadInstanceDir(home, bad); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("name %q: err = %v, want invalid name", bad, err)
		}
	}
}

// TestReadInstanceDirUnreadableConfig: an instance whose lima.yaml is a
// symbolic link loop or a dangling link is Broken with the reason, not
// "not found" (which the CLI and the menu show as Missing).
func TestReadInstanceDirUnreadableConfig(t *testing.T) {
	home := t.TempDir()
	for name, target := range map[string]string{"loop": "lima.yaml", "dangling": "nowhere.yaml"} {
		if err := os.MkdirAll(filepath.Join(home, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(home, name, "lima.yaml")); err != nil {
			t.Fatal(err)
		}
		st, err := ReadInstanceDir(home, name)
		if err != nil || st.Status != StatusBroken || !strings.HasPrefix(st.Reason, "lima.yaml: ") {
			t.Errorf("%s: %+v, %v", name, st, err)
		}
	}
}

func BenchmarkReadInstanceDir(b *testing.B) {
	home := b.TempDir()
	dir := filepath.Join(home, "box1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	pid := strconv.Itoa(os.Getpid())
	for f, c := range map[string]string{"lima.yaml": "", "ha.pid": pid, "qemu.pid": pid} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := ReadInstanceDir(home, "box1"); err != nil {
			b.Fatal(err)
		}
	}
}
