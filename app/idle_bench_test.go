package app_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/desktoptest"
	coredt "github.com/corral-dev/corral/core/desktoptest"
)

// BenchmarkIdleApp runs the real app process (default 3 s refresh) on a
// private bus with 5 boxes and measures, once it is up, the CPU time it
// uses while idle over CORRAL_BENCH_IDLE (default 30s) and its RSS. Run it
// once:
//
//	go test -run '^$' -bench IdleApp -benchtime 1x ./app
//
// Targets: about 0 CPU (cpu-%), RSS ≤ 40 MiB (rss-MiB).
func BenchmarkIdleApp(b *testing.B) {
	window := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("CORRAL_BENCH_IDLE")); err == nil {
		window = d
	}
	for b.Loop() {
		idleOnce(b, window)
	}
}

func idleOnce(b *testing.B, window time.Duration) {
	h := newHarness(b)
	conn := coredt.Conn(b, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		b.Fatal(err)
	}
	var st app.State
	for i := range 5 {
		st.Boxes = append(st.Boxes, menu.BoxView{Name: fmt.Sprintf("box-%d", i), State: boxstate.Running, MemBytes: 1 << 30,
			Denied: []menu.DeniedHost{{Host: "a.example.test", Port: 443, Count: 1, Last: time.Now()}}})
	}
	h.writeState(st)
	c := h.start(0) // 0: the app's default refresh interval
	select {
	case <-w.Registered:
	case <-time.After(15 * time.Second):
		b.Fatal("app never registered")
	}
	pid := c.cmd.Process.Pid
	time.Sleep(2 * time.Second) // past start-up
	cpu0 := cpuTicks(b, pid)
	time.Sleep(window)
	cpu1 := cpuTicks(b, pid)
	secs := float64(cpu1-cpu0) / 100 // USER_HZ
	b.ReportMetric(secs*1000, "cpu-ms/window")
	b.ReportMetric(100*secs/window.Seconds(), "cpu-%")
	b.ReportMetric(float64(statusKiB(b, pid, "VmRSS:"))/1024, "rss-MiB")
	b.ReportMetric(float64(statusKiB(b, pid, "VmHWM:"))/1024, "peak-rss-MiB")
}

func cpuTicks(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndex(s, ")")+2:]) // fields from 3 (state) on
	ut, _ := strconv.ParseInt(f[11], 10, 64)             // field 14 utime
	st, _ := strconv.ParseInt(f[12], 10, 64)             // field 15 stime
	return ut + st
}

func statusKiB(b *testing.B, pid int, key string) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, key) {
			v, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return v
		}
	}
	return 0
}
