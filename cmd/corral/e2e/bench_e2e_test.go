//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"
)

// runOverhead measures `corral run -- true` against a bare
// `ssh -F ssh.config lima-BOX true` on the same running box: wall time and
// the CPU of the whole process tree (user+sys from wait4). corral's own CPU
// is the difference. It prints a table; it asserts nothing about speed.
func runOverhead(t *testing.T, x *h, n int) {
	cfg := filepath.Join(x.home, "lima", x.box, "ssh.config")
	measure := func(name string, args ...string) (wall, cpu []time.Duration) {
		for i := 0; i < n; i++ {
			cmd := exec.Command(name, args...)
			cmd.Env = x.env
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
			wall = append(wall, time.Since(start))
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			cpu = append(cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
		return wall, cpu
	}
	med := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)/2]
	}
	p90 := func(d []time.Duration) time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s[len(s)*9/10]
	}
	sshWall, sshCPU := measure("ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none", "lima-"+x.box, "true")
	cWall, cCPU := measure(x.bin, "-C", x.project, "run", "--", "true")
	table := fmt.Sprintf(`| command (n=%d, running box) | wall median | wall p90 | CPU median (process tree) |
| --- | ---: | ---: | ---: |
| ssh -F ssh.config lima-BOX true (fresh connection) | %s | %s | %s |
| corral run -- true | %s | %s | %s |
| corral's own share | %s | | %s |
`, n,
		med(sshWall).Round(time.Millisecond), p90(sshWall).Round(time.Millisecond), med(sshCPU).Round(time.Millisecond),
		med(cWall).Round(time.Millisecond), p90(cWall).Round(time.Millisecond), med(cCPU).Round(time.Millisecond),
		(med(cWall) - med(sshWall)).Round(time.Millisecond), (med(cCPU) - med(sshCPU)).Round(time.Millisecond))
	t.Logf("run overhead:\n%s", table)
	if p := os.Getenv("CORRAL_BENCH_OUT"); p != "" {
		_ = os.WriteFile(p, []byte(table), 0o644)
	}
}
