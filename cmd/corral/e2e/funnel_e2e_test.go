//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/qemu"
)

// tcgOnlyName is the name under which this test binary acts as a qemu
// wrapper that forces TCG and nothing else: a stand-in for plain
// `limactl start` on a host whose KVM cannot boot the image (nested PVM).
const tcgOnlyName = "qemu-tcg-only"

func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == tcgOnlyName {
		os.Exit(tcgOnly(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func tcgOnly(args []string) int {
	real, err := qemu.FindQemu("x86_64")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out := args
	if !qemu.IsProbe(args) {
		if out, err = qemu.Rewrite(args, qemu.Options{Accel: qemu.AccelTCG}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	err = syscall.Exec(real, append([]string{real}, out...), os.Environ())
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// hostServer is a server on host loopback the guest must not reach except
// through the broker; it counts requests per path.
type hostServer struct {
	port string
	mu   sync.Mutex
	hits map[string]int
}

func startHostServer(t *testing.T) *hostServer {
	t.Helper()
	s := &hostServer{hits: map[string]int{}}
	ln := brokertest.ListenOutsideBrokerPorts(t)
	_, s.port, _ = net.SplitHostPort(ln.Addr().String())
	srv := &http.Server{Handler: s}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// startTLSHostServer is a hostServer behind TLS with ca's leaf (for
// 127.0.0.1), on host loopback.
func startTLSHostServer(t *testing.T, ca *testCA) *hostServer {
	t.Helper()
	s := &hostServer{hits: map[string]int{}}
	s.port = ca.serveTLS(t, s)
	return s
}

// ServeHTTP counts the request's path and answers "HOST-REACHED PATH".
func (s *hostServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.hits[r.URL.Path]++
	s.mu.Unlock()
	fmt.Fprint(w, "HOST-REACHED "+r.URL.Path)
}

func (s *hostServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// qemuCmdline is the running qemu's argv of box, read the way
// funnel.Verify reads it.
func (x *h) qemuCmdline(box string) string {
	x.t.Helper()
	b, err := os.ReadFile(filepath.Join(x.home, "lima", box, "qemu.pid"))
	must(x.t, err)
	pid := strings.TrimSpace(string(b))
	cl, err := os.ReadFile("/proc/" + pid + "/cmdline")
	must(x.t, err)
	return strings.ReplaceAll(string(cl), "\x00", " ")
}

// udpProbe sends a DNS query over UDP from the box to the two slirp
// addresses that map to host loopback (192.168.5.2, the gateway, and
// 192.168.5.4, the broker's guestfwd address, which carries TCP only) and
// prints "ANSWER addr" or "no-answer addr" for each. Tests never aim at
// any other address.
const udpProbe = `import socket
q = bytes.fromhex("abcd01000001000000000000076578616d706c650474657374000001" + "0001")
for addr in (("192.168.5.2", 53), ("192.168.5.4", 53)):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(3)
    try:
        s.sendto(q, addr)
        s.recv(512)
        print("ANSWER", addr[0])
    except OSError:
        print("no-answer", addr[0])`

// guestConnProcs counts live `corral guest-conn BOX` processes.
func guestConnProcs(box string) int {
	n := 0
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "\x00guest-conn\x00"+box) {
			n++
		}
	}
	return n
}

// TestHostFunnel runs a broker-mode box on its own project and proves the
// boundary from both sides. It runs after TestBoxLifecycle, whose box is
// removed by then (one VM at a time).
func TestHostFunnel(t *testing.T) {
	base := setup(t)
	proj := filepath.Join(filepath.Dir(base.project), "projf")
	must(t, os.MkdirAll(proj, 0o755))
	// A git project with the shadow opt-out, for gitGuardOptOut.
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "start"}} {
		if o, err := hostGit(t, proj, args...); err != nil {
			t.Fatalf("git %v: %v %s", args, err, o)
		}
	}
	x := &h{t: t, bin: base.bin, home: base.home, project: proj, env: base.env}
	out := x.ok("config", "show", "--json")
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(out), &cfg))
	x.box = cfg.Box
	// The trusted layer puts this box in broker mode and lets the broker
	// reach host loopback (the test's upstream), and by name the TLS
	// server of sniMismatch. It also gives the box user sudo (sudo =
	// true, a host-only key), so that guest root can try to undo the
	// funnel below without a second boot; that a broker-mode box has no
	// sudo by default is checked on TestClaudeBrokered's box.
	// It names one host port for the IDE bridge (ideBridge), at the first
	// boot: host_ports take a restart, minutes under TCG.
	ideNamed, ideUnnamed := startHostServer(t), startHostServer(t)
	tlsSrv := startTLSHostServer(t, newTestCA(t, t.TempDir()))
	// The upstream proxy (upstreamProxySubtest) is read when the broker
	// starts, so it is in the trusted layer from the first boot; its
	// no_proxy keeps every other subtest's upstream direct.
	upProxy, upProxyWhy := startE2EUpstreamProxy(t)
	must(t, os.MkdirAll(filepath.Join(x.home, "projects"), 0o700))
	must(t, os.WriteFile(filepath.Join(x.home, "projects", x.box+".toml"),
		[]byte("network = \"broker\"\negress = [\"127.0.0.0/8\", \"localhost:"+tlsSrv.port+"\"]\nsudo = true\ngit_shadow = false\nhost_ports = ["+ideNamed.port+"]\n"+upProxy.trustedLines()), 0o600))
	must(t, os.WriteFile(filepath.Join(filepath.Dir(x.project), "outside-marker"), []byte("HOST-SECRET\n"), 0o644))
	defer x.corral("rm", "-f")
	srv := startHostServer(t)

	if upProxy != nil {
		x.okEnv(upProxy.env, "up") // the broker reads the proxy's password from this keyring
	} else {
		x.ok("up")
	}
	meta := x.meta(t)
	if meta.Network != "broker" {
		t.Fatalf("box network %q, want broker", meta.Network)
	}
	port := strconv.Itoa(meta.BrokerPort)
	proxy := "http://192.168.5.4:" + port

	t.Run("the running qemu has the funnel", func(t *testing.T) {
		x.t = t
		cl := x.qemuCmdline(x.box)
		wants := []string{",restrict=on", ",ipv6=off", ",guestfwd=tcp:192.168.5.4:" + port + "-cmd:", " guest-conn " + x.box}
		// e2e.sh builds the small program beside corral: qemu runs it
		// instead of corral itself (core/guestconn).
		if _, err := os.Stat(filepath.Join(filepath.Dir(os.Getenv("CORRAL_BIN")), "corral-guest-conn")); err == nil {
			wants = append(wants, "/corral-guest-conn guest-conn "+x.box)
		}
		for _, want := range wants {
			if !strings.Contains(cl, want) {
				t.Errorf("qemu command line lacks %q:\n%s", want, cl)
			}
		}
		// The broker's guestfwd and the named host port's (ideBridge).
		if strings.Count(cl, "-netdev ") != 1 || strings.Count(cl, "guestfwd=") != 2 {
			t.Errorf("want exactly one netdev and two guestfwds:\n%s", cl)
		}
	})
	t.Run("the guest sees the broker at 192.168.5.4", func(t *testing.T) {
		x.t = t
		// A session's proxy URL names the session (the broker logs it,
		// for display only; guest/provision/40-network.sh).
		want := regexp.MustCompile(`^http://session-[0-9a-f]{12}:x@` + regexp.QuoteMeta(strings.TrimPrefix(proxy, "http://")) + "\n$")
		if got := x.ok("run", "--", "sh", "-c", "echo $HTTPS_PROXY"); !want.MatchString(got) {
			t.Errorf("HTTPS_PROXY in the box = %q, want %s with the session", got, proxy)
		}
	})
	t.Run("through the broker an allowed upstream answers", func(t *testing.T) {
		x.t = t
		// --noproxy "": the box's NO_PROXY lists 127.0.0.1, which here is
		// the host's loopback as the broker sees it.
		got := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-x", proxy, "http://127.0.0.1:"+srv.port+"/via-broker")
		if got != "HOST-REACHED /via-broker" || srv.count("/via-broker") != 1 {
			t.Errorf("via broker: %q, server hits %d", got, srv.count("/via-broker"))
		}
	})
	t.Run("allowed traffic leaves through the upstream proxy (squid), denied never reaches it", func(t *testing.T) {
		x.t = t
		if upProxy == nil {
			t.Skip(upProxyWhy)
		}
		upstreamProxySubtest(t, x, upProxy, proxy, srv)
	})
	testBoxRequests(t, x, proxy, srv)
	t.Run("a CONNECT whose TLS server name is not the CONNECT host is refused; the matching name passes", func(t *testing.T) {
		x.t = t
		sniMismatch(t, x, proxy, tlsSrv)
	})
	t.Run("the broker denies a host not on the list", func(t *testing.T) {
		x.t = t
		got := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, "http://denied.example.test/")
		if got != "403" {
			t.Errorf("denied host: HTTP %q, want 403 from the broker", got)
		}
	})
	t.Run("host loopback is not reachable directly", func(t *testing.T) {
		x.t = t
		for _, target := range []string{"192.168.5.2:" + srv.port, "192.168.5.2:" + port, "192.168.5.4:" + srv.port} {
			o, e, code := x.corral("run", "--", "curl", "-sS", "--noproxy", "*", "--max-time", "10", "http://"+target+"/direct")
			if code == 0 {
				t.Errorf("curl %s from the box succeeded: %q %q", target, o, e)
			}
		}
		if n := srv.count("/direct"); n != 0 {
			t.Errorf("the host server got %d direct requests", n)
		}
	})
	t.Run("DNS and UDP are gone", func(t *testing.T) {
		x.t = t
		// A raw DNS query over UDP to the gateway and to the broker's
		// address: neither gets an answer.
		got := x.ok("run", "--", "python3", "-c", udpProbe)
		if strings.Contains(got, "ANSWER") || strings.Count(got, "no-answer") != 2 {
			t.Errorf("DNS/UDP from the box: %q", got)
		}
	})
	t.Run("corral allow opens a denied host live", func(t *testing.T) {
		x.t = t
		url := "http://localhost:" + srv.port + "/allowed-live"
		get := func() string {
			return x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, url)
		}
		if got := get(); got != "403" {
			t.Fatalf("before allow: HTTP %q, want 403", got)
		}
		x.ok("allow", x.box, "localhost:"+srv.port)
		deadline := time.Now().Add(10 * time.Second)
		got := get()
		for got != "200" && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond)
			got = get()
		}
		if got != "200" {
			t.Errorf("after corral allow: HTTP %q, want 200 without a restart", got)
		}
		audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
		if !strings.Contains(string(audit), `"kind":"egress-denied"`) || !strings.Contains(string(audit), `"kind":"allow"`) {
			t.Error("the audit log lacks egress-denied or allow")
		}
	})
	t.Run("a box that rewrites its .corral.toml is still denied", func(t *testing.T) {
		x.t = t
		// One session (a session start checks the file; this is the box
		// rewriting it under a running broker): for each way of widening,
		// write the file, give the broker time to reload (its watcher
		// settles within a second), and ask for the host. An allowed but
		// unresolvable host would answer 502; the policy's denial is 403.
		// Adds about 20 s to this test.
		script := `set -u
url=http://widen.example.test/
try() { sleep 3; printf '%s=%s\n' "$1" "$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' --noproxy '' -x "$PROXY" "$url")"; }
printf 'egress = ["widen.example.test"]\n' > .corral.toml; try valid
printf 'EGRESS = ["widen.example.test"]\nNetwork = "full"\n' > .corral.toml; try capitalised
printf 'egress = ["widen.example.test"]\n' > /tmp/w.toml; rm -f .corral.toml; ln -s /tmp/w.toml .corral.toml; try symlink
rm -f .corral.toml; if mkfifo .corral.toml 2>/dev/null; then try fifo; else echo fifo=unsupported; fi
rm -f .corral.toml; printf 'EGRESS = ["widen.example.test"]\n' > .corral.toml
`
		got := x.ok("run", "--", "env", "PROXY="+proxy, "sh", "-c", script)
		for _, v := range []string{"valid", "capitalised", "symlink"} {
			if !strings.Contains(got, v+"=403\n") {
				t.Errorf("after a %s rewrite: want 403 from the broker, got:\n%s", v, got)
			}
		}
		if !strings.Contains(got, "fifo=403\n") && !strings.Contains(got, "fifo=unsupported\n") {
			t.Errorf("after a FIFO rewrite: want 403 from the broker, got:\n%s", got)
		}
		// The next session start checks the file: an unknown key is a
		// violation, so the session is refused (exit 2) naming it.
		_, e, code := x.corral("run", "--", "true")
		if code != 2 || !strings.Contains(e, "EGRESS: unknown key") {
			t.Errorf("a session with the capitalised file: exit %d, stderr %q; want 2 naming EGRESS", code, e)
		}
		// egress in the repository file is a request: the session starts,
		// and the host stays denied until the user approves it.
		must(t, os.WriteFile(filepath.Join(x.project, ".corral.toml"), []byte("egress = [\"widen.example.test\"]\n"), 0o644))
		if got := x.ok("run", "--", "curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", proxy, "http://widen.example.test/"); got != "403" {
			t.Errorf("a pending request: HTTP %q, want 403", got)
		}
		approveRequest(t, x, proxy)
		must(t, os.Remove(filepath.Join(x.project, ".corral.toml")))
	})
	t.Run("the golden's toolchains group is recorded and its registries need no approval", func(t *testing.T) {
		x.t = t
		toolchainsGroup(t, x, proxy)
	})
	t.Run("npm installs from the registry the golden recorded, with no approval", func(t *testing.T) {
		x.t = t
		npmInstallFromRecordedRegistry(t, x)
	})
	t.Run("learn, then enforce", func(t *testing.T) {
		x.t = t
		learnThenEnforce(t, x, proxy)
	})
	t.Run("benchmark: new guest connections per second", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		guestConnRate(t, x, port, 200)
	})
	t.Run("benchmark: run overhead on a broker-mode box", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		runOverhead(t, x, 12)
	})
	t.Run("no guest-conn process stays", func(t *testing.T) {
		x.t = t
		deadline := time.Now().Add(10 * time.Second)
		for guestConnProcs(x.box) > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := guestConnProcs(x.box); n != 0 {
			t.Errorf("%d guest-conn processes alive", n)
		}
	})
	t.Run("this box's broker refuses another box's credential route", func(t *testing.T) {
		x.t = t
		otherBoxRefusesRoute(t, x)
	})
	t.Run("with the git shadow opt-out the guard reverts a hostile .git/config and reports it", func(t *testing.T) {
		x.t = t
		gitGuardOptOut(t, x)
	})
	t.Run("corral review lists what the last session did", func(t *testing.T) {
		x.t = t
		reviewLastSession(t, x, proxy, srv.port)
	})
	t.Run("a named host port is reachable and an unnamed one is not", func(t *testing.T) {
		x.t = t
		ideBridge(t, x, ideNamed, ideUnnamed)
	})
	t.Run("root in the guest cannot undo the funnel", func(t *testing.T) {
		x.t = t
		// Flush the guest's own firewall as root (the box user has sudo,
		// from the trusted layer): only the host's qemu funnel is left.
		x.ok("run", "--", "sudo", "nft", "flush", "ruleset")
		if got := x.ok("run", "--", "sudo", "nft", "list", "ruleset"); strings.TrimSpace(got) != "" {
			t.Fatalf("ruleset not flushed: %q", got)
		}
		got := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-x", proxy, "http://127.0.0.1:"+srv.port+"/root-via-broker")
		if got != "HOST-REACHED /root-via-broker" {
			t.Errorf("broker after flush: %q", got)
		}
		for _, target := range []string{"192.168.5.2:" + srv.port, "192.168.5.2:" + port, "192.168.5.4:" + srv.port} {
			if o, _, code := x.corral("run", "--", "sudo", "curl", "-sS", "--noproxy", "*", "--max-time", "10", "http://"+target+"/root-direct"); code == 0 {
				t.Errorf("root reached %s directly: %q", target, o)
			}
		}
		if n := srv.count("/root-direct"); n != 0 {
			t.Errorf("the host server got %d direct requests from guest root", n)
		}
		if got := x.ok("run", "--", "sudo", "python3", "-c", udpProbe); strings.Contains(got, "ANSWER") {
			t.Errorf("root got a DNS/UDP answer: %q", got)
		}
		if got := x.ok("run", "--", "sh", "-c", "ip -6 route show default; ip -6 addr show scope global"); strings.TrimSpace(got) != "" {
			t.Errorf("IPv6 present in the box: %q", got)
		}
		// A guest listener does not appear on host loopback. It must be
		// up first (answering inside the guest), or the check proves nothing.
		x.ok("run", "--", "sudo", "sh", "-c", "nohup python3 -m http.server 18777 --bind 0.0.0.0 >/dev/null 2>&1 &")
		for deadline := time.Now().Add(60 * time.Second); ; {
			_, _, code := x.corral("run", "--", "curl", "-s", "-o", "/dev/null", "--noproxy", "*", "--max-time", "5", "http://127.0.0.1:18777/")
			if code == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the guest listener never answered inside the guest")
			}
			time.Sleep(time.Second)
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:18777", 2*time.Second); err == nil {
			c.Close()
			t.Error("a guest listener is reachable on host loopback")
		}
		// The mount shares the project only: a host file beside it is
		// neither readable nor writable from the box, even as root.
		if _, _, code := x.corral("run", "--", "sudo", "cat", filepath.Join(filepath.Dir(x.project), "outside-marker")); code == 0 {
			t.Error("guest root read a host file outside the project")
		}
		x.corral("run", "--", "sudo", "sh", "-c", "echo pwned > "+filepath.Join(filepath.Dir(x.project), "outside-written"))
		if _, err := os.Stat(filepath.Join(filepath.Dir(x.project), "outside-written")); err == nil {
			t.Error("guest root wrote a host file outside the project")
		}
	})
	t.Run("ports forward on a broker-mode box", func(t *testing.T) {
		x.t = t
		brokerBoxPorts(t, x)
	})
	t.Run("the app's notification and menu Allow a real denial through the real broker", func(t *testing.T) {
		x.t = t
		appAllowsRealDenials(t, x, proxy)
	})
	t.Run("stop_on_exit stops the box when its last session ends", func(t *testing.T) {
		x.t = t
		stopOnExit(t, x)
	})
	t.Run("a box started without corral's qemu is refused", func(t *testing.T) {
		x.t = t
		x.ok("stop")
		env := append([]string{}, os.Environ()...)
		env = append(env, "LIMA_HOME="+filepath.Join(x.home, "lima"))
		// Plain limactl start: Lima's own qemu, or on a host whose KVM cannot
		// boot the image a wrapper that only forces TCG.
		if ok, _ := qemu.KVMUsable(); !ok {
			self, err := os.Executable()
			must(t, err)
			link := filepath.Join(t.TempDir(), tcgOnlyName)
			must(t, os.Symlink(self, link))
			env = append(env, "QEMU_SYSTEM_X86_64="+link)
		}
		// The refusal needs only a running qemu (the check reads its
		// command line before any ssh), so the test does not wait for the
		// guest to boot: a TCG boot is minutes.
		cmd := exec.Command("limactl", "start", "--tty=false", "--timeout", "10m", x.box)
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var startOut syncBuffer
		cmd.Stdout, cmd.Stderr = &startOut, &startOut
		must(t, cmd.Start())
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			stop := exec.Command("limactl", "stop", "--force", x.box)
			stop.Env = env
			if b, err := stop.CombinedOutput(); err != nil {
				t.Errorf("limactl stop --force: %v\n%s", err, b)
			}
		}()
		pidFile := filepath.Join(x.home, "lima", x.box, "qemu.pid")
		cl := ""
		for deadline := time.Now().Add(3 * time.Minute); cl == ""; time.Sleep(500 * time.Millisecond) {
			select {
			case err := <-exited:
				t.Fatalf("limactl start ended before qemu ran: %v\n%s", err, startOut.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no qemu after 3 minutes of limactl start:\n%s", startOut.String())
			}
			if b, err := os.ReadFile(pidFile); err == nil {
				if c, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/cmdline"); err == nil {
					cl = strings.ReplaceAll(string(c), "\x00", " ")
				}
			}
		}
		if strings.Contains(cl, "restrict=on") {
			t.Fatalf("plain limactl start got the funnel anyway:\n%s", cl)
		}
		// Lima's pid files say "running" as soon as its host agent and
		// qemu are up; until then a session would try to start the box.
		var errOut string
		code := 0
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
			if st, err := os.Stat(filepath.Join(x.home, "lima", x.box, "ha.pid")); err == nil && st.Size() > 0 {
				_, errOut, code = x.corral("run", "--", "true")
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("Lima's host agent never wrote its pid file")
			}
		}
		if code == 0 || !strings.Contains(errOut, "host egress funnel is not in force") ||
			!strings.Contains(errOut, "corral stop "+x.box+" && corral up") {
			t.Errorf("session not refused: code %d stderr %q", code, errOut)
		}
	})
	t.Run("benchmark: a new box from the existing golden", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		newBoxPhases(t, x)
	})
}
