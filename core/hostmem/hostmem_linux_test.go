package hostmem

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// allocEnv makes the test binary allocate and touch this many MiB, print
// "ready", and wait for stdin to close.
const allocEnv = "CORRAL_HOSTMEM_TEST_ALLOC_MIB"

var sink []byte

func TestMain(m *testing.M) {
	if s := os.Getenv(allocEnv); s != "" {
		mib, _ := strconv.Atoi(s)
		sink = make([]byte, mib<<20)
		for i := 0; i < len(sink); i += 4096 {
			sink[i] = 1
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(int(sink[0]) - 1)
	}
	os.Exit(m.Run())
}

func startSleep(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestForPIDSleep(t *testing.T) {
	cmd := startSleep(t)
	u, err := ForPID(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if u.PID != cmd.Process.Pid || u.Source != SourcePSS || u.Bytes == 0 || u.PeakBytes == 0 {
		t.Errorf("usage = %+v", u)
	}
	if u.Bytes > 64<<20 {
		t.Errorf("sleep uses %d bytes?", u.Bytes)
	}
}

func TestForPIDGrowsWithTouchedMemory(t *testing.T) {
	const mib = 64
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", allocEnv, mib))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("child said %q", line)
	}
	u, err := ForPID(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", u)
	if u.Bytes < mib<<20 {
		t.Errorf("Bytes = %d, want >= %d", u.Bytes, mib<<20)
	}
	if u.PeakBytes < mib<<20 {
		t.Errorf("PeakBytes = %d, want >= %d", u.PeakBytes, mib<<20)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("child: %v", err)
	}
}

func TestForPIDGone(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if _, err := ForPID(cmd.Process.Pid); !errors.Is(err, ErrNotRunning) {
		t.Errorf("ForPID of exited process: %v, want ErrNotRunning", err)
	}
}

func TestVMProcessQEMU(t *testing.T) {
	dir := t.TempDir()
	if _, err := VMProcess(dir, VMTypeQEMU); !errors.Is(err, ErrNotRunning) {
		t.Errorf("no pid file: %v, want ErrNotRunning", err)
	}
	cmd := startSleep(t)
	if err := os.WriteFile(filepath.Join(dir, "qemu.pid"), fmt.Appendf(nil, "%d\n", cmd.Process.Pid), 0o600); err != nil {
		t.Fatal(err)
	}
	pid, err := VMProcess(dir, VMTypeQEMU)
	if err != nil || pid != cmd.Process.Pid {
		t.Errorf("VMProcess = %d, %v; want %d", pid, err, cmd.Process.Pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := VMProcess(dir, VMTypeQEMU); !errors.Is(err, ErrNotRunning) {
		t.Errorf("dead pid: %v, want ErrNotRunning", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := VMProcess(dir, VMTypeQEMU); err == nil {
		t.Error("bad pid file accepted")
	}
	if _, err := VMProcess(dir, VMTypeVZ); err == nil {
		t.Error("vz accepted on Linux")
	}
}

func BenchmarkForPID(b *testing.B) {
	pid := os.Getpid()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ForPID(pid); err != nil {
			b.Fatal(err)
		}
	}
}
