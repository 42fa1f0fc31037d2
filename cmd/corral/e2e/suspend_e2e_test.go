//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// suspendResume checks `corral stop --save` and the resume by `corral up`
// on x's running box (qemu) and keeps the times of both (logWarmBoot). It
// leaves the box running. About a minute under TCG: no boot.
//
// Proofs of a resume rather than a boot: a file in /dev/shm (tmpfs: a
// boot empties it) survives, and /proc/uptime goes on from where it was.
func suspendResume(t *testing.T, x *h) {
	marker := fmt.Sprintf("resume-%d", time.Now().UnixNano())
	x.ok("run", "--", "sh", "-c", "echo "+marker+" > /dev/shm/corral-e2e-marker")
	up0 := guestUptime(t, x)
	qemuPID := readPID(t, filepath.Join(x.home, "lima", x.box, "qemu.pid"))

	start := time.Now()
	if out := x.ok("stop", "--save"); out != "saved "+x.box+"\n" {
		t.Errorf("stop --save said %q", out)
	}
	saveTook := time.Since(start)
	if err := syscall.Kill(qemuPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("qemu (pid %d) still there after the save: %v", qemuPID, err)
	}
	for _, e := range x.ls() {
		if e.Name == x.box && (e.State != "Stopped" || e.MemBytes != 0) {
			t.Errorf("ls after the save: %+v", e)
		}
	}
	if out := x.ok("ls"); !strings.Contains(out, "Saved") {
		t.Errorf("ls does not show the box as Saved:\n%s", out)
	}

	start = time.Now()
	_, errOut, code := x.corral("up")
	resumeTook := time.Since(start)
	if code != 0 || !strings.Contains(errOut, "resumed box "+x.box) {
		t.Fatalf("up after the save: exit %d, stderr:\n%s", code, errOut)
	}
	if got := strings.TrimSpace(x.ok("run", "--", "cat", "/dev/shm/corral-e2e-marker")); got != marker {
		t.Errorf("/dev/shm after the resume: %q, want %q (the box booted)", got, marker)
	}
	if up1 := guestUptime(t, x); up1 < up0 {
		t.Errorf("uptime %.1f s after the resume, %.1f s before: the box booted", up1, up0)
	}
	if got := x.ok("run", "--", "cat", "README.txt"); got != "hello from the host\n" {
		t.Errorf("project mount after the resume: %q", got)
	}
	x.ok("run", "--", "sh", "-c", "echo 'after resume' > resumed.txt")
	if b, err := os.ReadFile(filepath.Join(x.project, "resumed.txt")); err != nil || string(b) != "after resume\n" {
		t.Errorf("host sees %q, %v", b, err)
	}
	guestNow, err := strconv.ParseInt(strings.TrimSpace(x.ok("run", "--", "date", "+%s")), 10, 64)
	if err != nil || abs(time.Now().Unix()-guestNow) > 30 {
		t.Errorf("guest clock %d, host %d (%v): not stepped after the resume", guestNow, time.Now().Unix(), err)
	}
	meta := x.meta(t)
	if len(meta.Saved) != 0 {
		t.Errorf("metadata still says saved: %s", meta.Saved)
	}

	lastSave, lastResume = saveTook, resumeTook
}

// lastSave and lastResume are suspendResume's times; TestBoxLifecycle's
// "stop and up again" (a warm boot of the same box) prints them beside
// its own (docs/BENCHMARKS.md, "warm boot vs resume"): no boot of its own.
var lastSave, lastResume time.Duration

// logWarmBoot prints the warm boot vs resume row.
func logWarmBoot(t *testing.T, x *h, boot time.Duration) {
	if lastResume == 0 {
		return
	}
	t.Logf("warm boot vs resume (docs/BENCHMARKS.md):\n"+
		"| box | save: corral stop --save (s) | resume: corral up (s) | warm boot: corral up (s) |\n"+
		"| --- | ---: | ---: | ---: |\n"+
		"| %s | %.1f | %.1f | %.1f |",
		x.box, lastSave.Seconds(), lastResume.Seconds(), boot.Seconds())
}

func guestUptime(t *testing.T, x *h) float64 {
	t.Helper()
	f := strings.Fields(x.ok("run", "--", "cat", "/proc/uptime"))
	if len(f) == 0 {
		t.Fatal("empty /proc/uptime")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	must(t, err)
	return v
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	must(t, err)
	return pid
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}
