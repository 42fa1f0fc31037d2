package untrusted

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, size int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Repeat("a", size)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small := write("small", 10)
	exact := write("exact", 64)
	big := write("big", 65)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name string
		path string
		want error // nil: read succeeds
	}{
		{"regular", small, nil},
		{"at the limit", exact, nil},
		{"symlink to regular", link("ok-link", small), nil},
		{"over the limit", big, ErrTooLarge},
		{"fifo", fifo, ErrNotRegular},
		{"symlink to fifo", link("fifo-link", fifo), ErrNotRegular},
		{"dev zero", "/dev/zero", ErrNotRegular},
		{"symlink to dev zero", link("zero-link", "/dev/zero"), ErrNotRegular},
		{"directory", dir, ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), fs.ErrNotExist},
		{"dangling symlink", link("dangling", filepath.Join(dir, "none")), fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ReadFile(tc.path, 64)
			if tc.want == nil {
				if err != nil || len(b) == 0 {
					t.Fatalf("ReadFile = %d bytes, %v", len(b), err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadFile error = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestReadFileProcSize: files whose stat size is 0 but that have content
// (procfs) are still bounded by the read limit, not by their claimed size.
func TestReadFileProcSize(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no procfs")
	}
	if _, err := ReadFile("/proc/self/status", 16); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile of a growing file = %v, want ErrTooLarge", err)
	}
}

func TestReadTail(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "serial.log")
	if err := os.WriteFile(log, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit int64
		want  string
	}{{4, "6789"}, {10, "0123456789"}, {64, "0123456789"}, {0, ""}} {
		b, err := ReadTail(log, tc.limit)
		if err != nil || string(b) != tc.want {
			t.Errorf("ReadTail(%d) = %q, %v; want %q", tc.limit, b, err, tc.want)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	toFIFO := filepath.Join(dir, "to-fifo")
	if err := os.Symlink(fifo, toFIFO); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, toFIFO, dir, "/dev/zero"} {
		if _, err := ReadTail(p, 64); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadTail(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	if _, err := ReadTail(filepath.Join(dir, "missing"), 64); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
