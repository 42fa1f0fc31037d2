//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchOnly skips a measurement unless CORRAL_E2E_BENCH=1 (`make bench-e2e`):
// the numbers in docs/BENCHMARKS.md come from such a run, and CI's test run
// (make test-all) spends its VM minutes on assertions, not on timing loops.
func benchOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("CORRAL_E2E_BENCH") != "1" {
		t.Skip("a measurement: set CORRAL_E2E_BENCH=1 (make bench-e2e)")
	}
}

// runOverhead measures, on the same running box and in one run, `corral
// run -- true` against what a Lima user runs instead (`limactl shell BOX
// true`), a bare ssh through Lima's own master, a bare ssh client through
// corral's master (what corral run spawns), and a fresh ssh connection:
// wall time and the CPU of the whole process tree (user+sys from wait4).
// The masters' CPU is not in any tree: it is read from /proc before and
// after and given per session. corral's own CPU is corral's tree minus
// the bare mux client's. It prints a table (docs/BENCHMARKS.md); it
// asserts nothing about speed.
func runOverhead(t *testing.T, x *h, n int) {
	cfg := filepath.Join(x.home, "lima", x.box, "ssh.config")
	limaSock := filepath.Join(x.home, "lima", x.box, "ssh.sock")
	env := append(append([]string{}, x.env...), "LIMA_HOME="+filepath.Join(x.home, "lima"))
	x.ok("run", "--", "true") // corral's master is up
	measure := func(masterPID int, name string, args ...string) (wall, cpu []time.Duration, master time.Duration) {
		m0 := procCPU(masterPID)
		for i := 0; i < n; i++ {
			cmd := exec.Command(name, args...)
			cmd.Env = env
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", name, args, err, out)
			}
			wall = append(wall, time.Since(start))
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			cpu = append(cpu, time.Duration(ru.Utime.Nano()+ru.Stime.Nano()))
		}
		if masterPID != 0 {
			master = (procCPU(masterPID) - m0) / time.Duration(n)
		}
		return wall, cpu, master
	}
	sorted := func(d []time.Duration) []time.Duration {
		s := append([]time.Duration(nil), d...)
		sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
		return s
	}
	med := func(d []time.Duration) time.Duration { return sorted(d)[len(d)/2] }
	p90 := func(d []time.Duration) time.Duration { return sorted(d)[len(d)*9/10] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

	limaMaster := sshMasterPID(cfg, limaSock, x.box)
	corralMaster := x.masterPID()
	type row struct {
		name, master string
		wall, cpu    []time.Duration
		mcpu         time.Duration
	}
	var rows []row
	add := func(name, master string, pid int, argv ...string) row {
		w, c, m := measure(pid, argv[0], argv[1:]...)
		r := row{name, master, w, c, m}
		rows = append(rows, r)
		return r
	}
	add("limactl shell BOX true", "Lima's", limaMaster, "limactl", "shell", "--workdir", "/", x.box, "true")
	add("ssh -F ssh.config lima-BOX true (Lima's master)", "Lima's", limaMaster, "ssh", "-F", cfg, "lima-"+x.box, "true")
	mux := add("ssh through corral's master, corral-launch / true", "corral's", corralMaster,
		"ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath="+x.masterSock(), "-o", "SendEnv=CORRAL_FWD_*",
		"-T", "lima-"+x.box, "/usr/local/bin/corral-launch / true")
	c := add("corral run -- true", "corral's", corralMaster, x.bin, "-C", x.project, "run", "--", "true")
	add("ssh -F ssh.config lima-BOX true (fresh connection)", "none", 0,
		"ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none", "lima-"+x.box, "true")

	var b strings.Builder
	fmt.Fprintf(&b, "| command (n=%d, same running box, one run) | wall median | wall p90 | CPU median (process tree) | master CPU per session |\n", n)
	b.WriteString("| --- | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		mc := "-"
		if r.master != "none" {
			mc = ms(r.mcpu) + " (" + r.master + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.name, ms(med(r.wall)), ms(p90(r.wall)), ms(med(r.cpu)), mc)
	}
	lw, lc := med(rows[0].wall), med(rows[0].cpu)
	fmt.Fprintf(&b, "\ncorral run / limactl shell: wall %.2fx, CPU %.2fx (CPU with each side's master: %.2fx); corral's own CPU (corral run minus the bare mux client): %s\n",
		float64(med(c.wall))/float64(lw), float64(med(c.cpu))/float64(lc),
		float64(med(c.cpu)+c.mcpu)/float64(lc+rows[0].mcpu), ms(med(c.cpu)-med(mux.cpu)))
	t.Logf("run overhead:\n%s", b.String())
	if p := os.Getenv("CORRAL_BENCH_OUT"); p != "" {
		_ = os.WriteFile(p, []byte(b.String()), 0o644)
	}
}

// sshMasterPID asks the master on sock for its pid; 0 when none answers.
func sshMasterPID(cfg, sock, box string) int {
	out, _ := exec.Command("ssh", "-F", cfg, "-o", "ControlPath="+sock, "-O", "check", "lima-"+box).CombinedOutput()
	m := regexp.MustCompile(`pid=(\d+)`).FindSubmatch(out)
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(m[1]))
	return pid
}

// procCPU is a process's user+system CPU from /proc/PID/stat.
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// guestConnRate measures, from inside the running broker-mode box, new
// sequential connections per second through the host funnel to the
// broker: each one is a TCP connection to the broker's guestfwd address
// (qemu forks and execs corral-guest-conn, which hands the descriptor to
// the broker), a CONNECT for a host off the list, and the broker's 403.
// Guest side: the rate python sees; host side: the broker's CPU over the
// same interval, from /proc, per connection (the guest-conn children's CPU
// is measured on its own: go test -bench GuestConnProcess ./cmd/corral).
func guestConnRate(t *testing.T, x *h, port string, n int) {
	script := fmt.Sprintf(`import socket, time
n = %d
ok = 0
t = time.monotonic()
for i in range(n):
    s = socket.create_connection(("192.168.5.4", %s), timeout=20)
    s.sendall(b"CONNECT rate.example.test:443 HTTP/1.1\r\nHost: rate.example.test:443\r\n\r\n")
    if s.recv(64).startswith(b"HTTP/1.1 403"):
        ok += 1
    s.close()
print(n, ok, time.monotonic() - t)`, n, port)
	brokerPID := x.meta(t).BrokerPID
	before := procCPU(brokerPID)
	out := x.ok("run", "--", "python3", "-c", script)
	after := procCPU(brokerPID)
	var got, ok int
	var secs float64
	if _, err := fmt.Sscan(out, &got, &ok, &secs); err != nil || got != n || ok != n {
		t.Fatalf("guest connections: %q (%v); want %d answered 403", out, err, n)
	}
	var b strings.Builder
	b.WriteString("| measure (n sequential, one run) | value |\n| --- | ---: |\n")
	fmt.Fprintf(&b, "| new guest connections per second, guest side (connect, CONNECT, 403, close) | %.0f |\n", float64(n)/secs)
	fmt.Fprintf(&b, "| wall per connection, guest side | %.1f ms |\n", secs*1000/float64(n))
	if brokerPID > 0 {
		fmt.Fprintf(&b, "| broker CPU per connection (decision, 403, log line) | %.2f ms |\n", float64(after-before)/float64(time.Millisecond)/float64(n))
	}
	t.Logf("guest connections through the funnel (n=%d):\n%s", n, b.String())
	if p := os.Getenv("CORRAL_BENCH_OUT"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "\n%s", b.String())
			f.Close()
		}
	}
}
