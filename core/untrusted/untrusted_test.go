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

func TestOpenFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	toFIFO := filepath.Join(dir, "to-fifo")
	if err := os.Symlink(fifo, toFIFO); err != nil {
		t.Fatal(err)
	}
	toZero := filepath.Join(dir, "to-zero")
	if err := os.Symlink("/dev/zero", toZero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, toFIFO, toZero, dir, "/dev/null"} {
		for _, flag := range []int{os.O_WRONLY | os.O_APPEND | os.O_CREATE, os.O_RDWR | os.O_CREATE, os.O_RDONLY} {
			if f, err := OpenFile(p, flag, 0o600); !errors.Is(err, ErrNotRegular) {
				if f != nil {
					f.Close()
				}
				t.Errorf("OpenFile(%s, %#x) = %v, want ErrNotRegular", p, flag, err)
			}
		}
		if f, err := Open(p); !errors.Is(err, ErrNotRegular) {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(%s) = %v, want ErrNotRegular", p, err)
		}
	}
	// A missing file: created with O_CREATE, not found without.
	log := filepath.Join(dir, "x.log")
	if _, err := OpenFile(log, os.O_WRONLY|os.O_APPEND, 0o600); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenFile without O_CREATE of a missing file = %v", err)
	}
	for range 2 {
		f, err := OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString("a\n"); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if b, _ := os.ReadFile(log); string(b) != "a\na\n" {
		t.Errorf("appended %q", b)
	}
	f, err := Open(log)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestReadPID(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sparse := filepath.Join(dir, "sparse")
	if f, err := os.Create(sparse); err != nil {
		t.Fatal(err)
	} else {
		if err := f.Truncate(1 << 40); err != nil {
			t.Skip("no sparse files here:", err)
		}
		f.Close()
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		pid        int
		want       error
	}{
		{"pid", write("ok", "1234\n"), 1234, nil},
		{"spaces", write("sp", "  42 \n"), 42, nil},
		{"zero", write("zero", "0\n"), 0, ErrBadPID},
		{"negative", write("neg", "-5"), 0, ErrBadPID},
		{"garbage", write("garbage", "\x1b[31mred"), 0, ErrBadPID},
		{"empty", write("empty", ""), 0, ErrBadPID},
		{"too long", write("long", strings.Repeat("1", 33)), 0, ErrTooLarge},
		{"sparse terabyte", sparse, 0, ErrTooLarge},
		{"fifo", fifo, 0, ErrNotRegular},
		{"dev zero", "/dev/zero", 0, ErrNotRegular},
		{"directory", dir, 0, ErrNotRegular},
		{"missing", filepath.Join(dir, "none"), 0, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := ReadPID(tc.path)
			if pid != tc.pid || !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("ReadPID = %d, %v; want %d, %v", pid, err, tc.pid, tc.want)
			}
			if err != nil && len(err.Error()) > len(tc.path)+100 {
				t.Errorf("error too long: %q", err)
			}
		})
	}
}
