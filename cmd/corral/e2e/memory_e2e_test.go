//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/hostmem"
)

// qemuPSS is the host memory (PSS + SwapPss, core/hostmem) of x's qemu.
func qemuPSS(t *testing.T, x *h) uint64 {
	t.Helper()
	u, err := hostmem.ForPID(readPID(t, filepath.Join(x.home, "lima", x.box, "qemu.pid")))
	must(t, err)
	return u.Bytes
}

func mib(n uint64) string { return fmt.Sprintf("%d MiB", n>>20) }

// settle waits 10 s (the guest reports freed pages 2 s after they pile
// up, then in 64 MiB batches), then polls x's qemu PSS every 5 s for up
// to max and returns it once it stopped falling (two readings within
// 8 MiB), or at max.
func settle(t *testing.T, x *h, max time.Duration) (uint64, time.Duration) {
	start := time.Now()
	time.Sleep(10 * time.Second)
	last := qemuPSS(t, x)
	for time.Since(start) < max {
		time.Sleep(5 * time.Second)
		now := qemuPSS(t, x)
		if now+8<<20 > last && now <= last+8<<20 {
			return now, time.Since(start)
		}
		last = now
	}
	return last, time.Since(start)
}

// balloonGivesBack measures, on x's running box and in one run, the host
// memory (PSS) of its qemu after the guest allocates and frees 1 GiB
// (dd's 1 GiB buffer, filled from /dev/zero, then freed at its exit):
// first with the guest's balloon driver unloaded (the VM as it was before
// the balloon), then with it loaded again (free-page reporting hands the
// freed pages back to qemu). It checks the wrapper added the device and
// the guest found it with the reporting feature, and that the memory
// came back; it prints the table of docs/BENCHMARKS.md.
func balloonGivesBack(t *testing.T, x *h) {
	ha, _ := os.ReadFile(filepath.Join(x.home, "lima", x.box, "ha.stderr.log"))
	if !strings.Contains(string(ha), "memory: virtio-balloon with free-page reporting") {
		t.Errorf("the wrapper did not say it added the balloon (ha.stderr.log)")
	}
	// VIRTIO_BALLOON_F_FREE_PAGE_REPORTING is feature bit 5; sysfs shows
	// the negotiated features as a string of bits, bit 0 first.
	feat := strings.TrimSpace(x.ok("run", "--", "sh", "-c",
		`for d in /sys/bus/virtio/devices/*; do [ "$(cat $d/device)" = 0x0005 ] && cat $d/features; done; true`))
	if len(feat) < 6 || feat[5] != '1' {
		t.Fatalf("the guest has no balloon with free-page reporting: features %q", feat)
	}
	alloc := func() {
		x.ok("run", "--", "sh", "-c", "dd if=/dev/zero of=/dev/null bs=1G count=1 2>/dev/null")
	}
	x.ok("run", "--", "sudo", "modprobe", "-r", "virtio_balloon")
	off0 := qemuPSS(t, x)
	alloc()
	time.Sleep(30 * time.Second) // what reporting needs below, with nothing to report
	off1 := qemuPSS(t, x)

	x.ok("run", "--", "sudo", "modprobe", "virtio_balloon")
	// Registering reports every free page once: the 1 GiB freed above.
	back, took0 := settle(t, x, 2*time.Minute)
	alloc()
	on1, took1 := settle(t, x, 2*time.Minute)
	if on1+256<<20 > off1 {
		t.Errorf("the balloon gave back less than 256 MiB: %s after the free with it, %s without", mib(on1), mib(off1))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| qemu PSS (same box, one run; guest %s) | before | after the guest allocates and frees 1 GiB |\n| --- | ---: | ---: |\n", strings.TrimSpace(x.ok("run", "--", "sh", "-c", "grep MemTotal /proc/meminfo")))
	fmt.Fprintf(&b, "| without the balloon (guest driver unloaded) | %s | %s (30 s later) |\n", mib(off0), mib(off1))
	fmt.Fprintf(&b, "| with the balloon (free-page reporting) | %s (the driver loaded again: settled in %.0f s) | %s (settled in %.0f s) |\n",
		mib(back), took0.Seconds(), mib(on1), took1.Seconds())
	t.Logf("memory given back:\n%s", b.String())
	benchOut(b.String())
}

// lowMemorySave simulates memory pressure on x's running box: a
// save_when_free_below above anything the host has, and the box idle for
// more than its idle_stop (2s in its trusted layer); `corral stop --idle`
// (its sweep) must save it, not stop it, say why in the metadata and the
// audit log, and `corral up` resume it. It prints the save and resume
// times (docs/BENCHMARKS.md). It leaves the box running, with its config
// as it found it.
func lowMemorySave(t *testing.T, x *h) {
	global := filepath.Join(x.home, "config.toml")
	orig, err := os.ReadFile(global)
	must(t, err)
	trusted := filepath.Join(x.home, "projects", x.box+".toml")
	must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
	must(t, os.WriteFile(trusted, []byte("idle_stop = \"2s\"\n"), 0o600))
	restore := func() {
		_ = os.WriteFile(global, orig, 0o600)
		_ = os.Remove(trusted)
	}
	defer restore()
	x.ok("up") // picks up idle_stop
	// From here no corral command but the sweep: every command sweeps.
	must(t, os.WriteFile(global, append(append([]byte{}, orig...), "save_when_free_below = \"1TiB\"\n"...), 0o600))
	time.Sleep(3 * time.Second)
	start := time.Now()
	_, errOut, code := x.corral("stop", "--idle")
	took := time.Since(start)
	restore()
	if code != 0 {
		t.Fatalf("stop --idle: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "saving box "+x.box+", the least recently used idle box") {
		t.Errorf("the sweep did not say why it saved the box:\n%s", errOut)
	}
	var saved struct {
		Reason  string `json:"reason"`
		Balloon bool   `json:"balloon"`
	}
	if m := x.meta(t); len(m.Saved) == 0 || json.Unmarshal(m.Saved, &saved) != nil || saved.Reason != "low-memory" || !saved.Balloon {
		t.Fatalf("metadata after the sweep: saved %s", m.Saved)
	}
	audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
	if !strings.Contains(string(audit), `"kind":"low-memory-save","box":"`+x.box+`"`) {
		t.Errorf("no low-memory-save in the audit log")
	}
	if strings.Contains(string(audit), `"kind":"idle-stop","box":"`+x.box+`"`) {
		t.Errorf("the box was stopped (idle-stop in the audit log), not saved")
	}
	start = time.Now()
	_, errOut, code = x.corral("up")
	resumeTook := time.Since(start)
	if code != 0 || !strings.Contains(errOut, "resumed box "+x.box) {
		t.Fatalf("up after the low-memory save: exit %d\n%s", code, errOut)
	}
	ha, _ := os.ReadFile(filepath.Join(x.home, "lima", x.box, "ha.stderr.log"))
	if !strings.Contains(string(ha), "memory: virtio-balloon with free-page reporting") {
		t.Errorf("the resumed qemu has no balloon (ha.stderr.log)")
	}
	if got := x.ok("run", "--", "cat", "README.txt"); got != "hello from the host\n" {
		t.Errorf("project mount after the resume: %q", got)
	}
	row := fmt.Sprintf("| simulated pressure (save_when_free_below = \"1TiB\") | save of the LRU idle box: corral stop --idle (s) | resume: corral up (s) |\n| --- | ---: | ---: |\n| %s | %.1f | %.1f |\n",
		x.box, took.Seconds(), resumeTook.Seconds())
	t.Logf("low-memory save:\n%s", row)
	benchOut(row)
}
