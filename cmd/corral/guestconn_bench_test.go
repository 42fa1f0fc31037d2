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
// under the host funnel: one fork+exec of `EXE guest-conn BOX` with a
// socketpair end on its stdin, passing it to a listening broker socket.
// EXE is corral itself (the fallback) or the small corral-guest-conn that
// qemuwrap.NewPlan prefers when it is installed beside corral; an empty Go
// program (`func main() {}`) is the floor of any Go process on the same
// machine. cpu-ms/op is the child's user+system CPU from rusage (the target
// is at most 3 ms); wall-ms/op includes the fork and the exec. The
// binaries are built once with `go build` into a temporary directory.
//
//	go test -run '^$' -bench GuestConnProcess -benchtime 200x -count 3 ./cmd/corral
func BenchmarkGuestConnProcess(b *testing.B) {
	dir := b.TempDir()
	build := func(out string, args ...string) string {
		exe := filepath.Join(dir, out)
		cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", exe}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build %s: %v\n%s", args, err, out)
		}
		return exe
	}
	empty := filepath.Join(dir, "empty", "main.go")
	if err := os.MkdirAll(filepath.Dir(empty), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(empty, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	exes := []struct{ name, path string }{
		{"corral", build("corral", ".")},
		{"corral-guest-conn", build("corral-guest-conn", "../corral-guest-conn")},
		{"empty-go-program", build("empty-go", empty)},
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
	for _, exe := range exes {
		b.Run(exe.name, func(b *testing.B) {
			var cpu time.Duration
			start := time.Now()
			for i := 0; i < b.N; i++ {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					b.Fatal(err)
				}
				guest, stdin := os.NewFile(uintptr(fds[0]), "guest"), os.NewFile(uintptr(fds[1]), "stdin")
				cmd := exec.Command(exe.path, "guest-conn", "bench")
				cmd.Env = env
				cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdin, stdin
				if err := cmd.Run(); err != nil {
					b.Fatalf("%s guest-conn: %v", exe.name, err)
				}
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				stdin.Close()
				guest.Close()
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "wall-ms/op")
		})
	}
}
