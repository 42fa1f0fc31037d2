package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
)

// BenchmarkGuestConnProcess measures what qemu pays per guest connection
// under the host funnel: one fork+exec of the real corral binary running
// `corral guest-conn BOX` with a socketpair end on its stdin, passing it to a
// listening broker socket. cpu-ms/op is the child's user+system CPU from
// rusage (the target is at most 3 ms); wall-ms/op includes the fork and the
// exec. The binary is built once with `go build` into a temporary directory.
//
//	go test -run '^$' -bench GuestConnProcess -benchtime 200x ./cmd/corral
func BenchmarkGuestConnProcess(b *testing.B) {
	dir := b.TempDir()
	exe := filepath.Join(dir, "corral")
	if out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	l := paths.Layout{Home: filepath.Join(dir, "home")}
	if err := l.Ensure(); err != nil {
		b.Fatal(err)
	}
	ln, err := funnel.Listen(l.BrokerSocket("bench"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	env := append(os.Environ(), paths.EnvHome+"="+l.Home)
	var cpu time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			b.Fatal(err)
		}
		guest, stdin := os.NewFile(uintptr(fds[0]), "guest"), os.NewFile(uintptr(fds[1]), "stdin")
		cmd := exec.Command(exe, "guest-conn", "bench")
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdin, stdin
		if err := cmd.Run(); err != nil {
			b.Fatalf("guest-conn: %v", err)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		stdin.Close()
		guest.Close()
	}
	b.StopTimer()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "wall-ms/op")
}
