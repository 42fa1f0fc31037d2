package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// exampleResolver maps every *.example.test name to 127.0.0.1 and fails
// for anything else: tests never reach anything but loopback.
type exampleResolver struct{}

func (exampleResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if strings.HasSuffix(host, ".example.test") {
		return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// writeBoxMeta records a box for e's project, as `corral up` would.
func writeBoxMeta(t *testing.T, e env, network string) paths.Layout {
	t.Helper()
	l := paths.Layout{Home: e.home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := box.WriteMeta(l, box.Meta{Name: e.box, Project: e.proj, Network: network, BrokerPort: 42001}); err != nil {
		t.Fatal(err)
	}
	return l
}

// testFactory is run's factory, for commands built with a runF hook.
func testFactory(e env, tty bool) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	io, _, out, errOut := Test(tty)
	f := &Factory{
		IO:       io,
		Layout:   func() (paths.Layout, error) { return paths.Layout{Home: e.home}, nil },
		Platform: config.Platform{OS: "linux", Arch: "amd64"},
		Getenv:   func(string) string { return "" },
		Dir:      e.proj,
	}
	return f, out, errOut
}

// startBroker runs `corral broker args...` in-process with the test
// resolver until the test ends, and returns its listen address.
func startBroker(t *testing.T, e env, args []string, hook func(*BrokerOptions)) string {
	t.Helper()
	f, _, _ := testFactory(e, false)
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	cmd := NewCmdBroker(f, func(o *BrokerOptions) error {
		o.ctx = ctx
		o.resolver = exampleResolver{}
		o.listening = func(a string) { addrc <- a }
		if hook != nil {
			hook(o)
		}
		return brokerRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage = true
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("broker returned %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("broker did not stop within 15s of cancellation")
		}
	})
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		done <- err
		t.Fatalf("broker exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("broker did not listen within 15s")
	}
	return ""
}

// proxyGet fetches target through the proxy at addr and returns the status
// and the egress reason header.
func proxyGet(t *testing.T, addr, target string) (int, string) {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(target)
	if err != nil {
		t.Fatalf("GET %s via %s: %v", target, addr, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("X-Corral-Egress-Reason")
}

// waitStatus polls until target answers want through the proxy. The
// bound is generous for a loaded machine; the time taken is returned.
func waitStatus(t *testing.T, addr, target string, want int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, _ := proxyGet(t, addr, target)
		if code == want {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("GET %s: still %d after 10s, want %d", target, code, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func upstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from", r.Host)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

func TestBrokerLive(t *testing.T) {
	e := setup(t, "")
	l := writeBoxMeta(t, e, "broker")
	port := upstream(t)
	addr := startBroker(t, e, []string{"--box", e.box, "--listen", "127.0.0.1:0"},
		func(o *BrokerOptions) { o.testRanges = []string{"127.0.0.0/8"} })
	target := func(host string) string { return "http://" + host + ".example.test:" + port + "/" }

	// Denied, with one audit line however often it is retried.
	for range 3 {
		if code, reason := proxyGet(t, addr, target("api")); code != http.StatusForbidden || reason != "host-not-allowed" {
			t.Fatalf("before allow: %d %q", code, reason)
		}
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: e.box})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != audit.KindEgressDenied || evs[0].Fields["host"] != "api.example.test" ||
		evs[0].Fields["port"] != float64(mustAtoi(t, port)) || evs[0].Fields["reason"] != "host-not-allowed" {
		t.Fatalf("audit events %+v", evs)
	}

	// corral allow makes it pass without a restart.
	code, out, errOut := run(t, e, false, "allow", e.box, "api.example.test:*")
	if code != 0 || out != "allowed api.example.test:* for box "+e.box+" (always)\n" || errOut != "" {
		t.Fatalf("allow: %d %q %q", code, out, errOut)
	}
	took := waitStatus(t, addr, target("api"), http.StatusOK)
	t.Logf("approval applied after %v", took)

	// An approval that expires is dropped by the timer, with no file change.
	s, err := approval.Open(l, e.box)
	if err != nil {
		t.Fatal(err)
	}
	exp := writeExpiring(t, s, "exp.example.test:*", 1500*time.Millisecond)
	waitStatus(t, addr, target("exp"), http.StatusOK)
	waitStatus(t, addr, target("exp"), http.StatusForbidden)
	if time.Now().Before(exp) {
		t.Fatal("expiring approval dropped before its expiry")
	}

	// The trusted config layer reloads live; a broken one keeps the last
	// good config, and approvals still apply on top of it.
	trusted := l.ProjectConfig(e.box)
	if err := os.WriteFile(trusted, []byte("egress = [\"cfg.example.test:*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, addr, target("cfg"), http.StatusOK)
	if err := os.WriteFile(trusted, []byte("egress = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := run(t, e, false, "allow", e.box, "late.example.test:*", "--once"); code != 0 {
		t.Fatal("allow --once failed")
	}
	waitStatus(t, addr, target("late"), http.StatusOK)
	if code, _ := proxyGet(t, addr, target("cfg")); code != http.StatusOK {
		t.Errorf("broken config dropped the last good one: %d", code)
	}

	// Revoking denies again.
	if code, _, _ := run(t, e, false, "allow", "--revoke", e.box, "api.example.test:*"); code != 0 {
		t.Fatal("revoke failed")
	}
	waitStatus(t, addr, target("api"), http.StatusForbidden)

	// Every decision is in the box's egress log.
	entries, err := egress.ReadLog(l.EgressLog(e.box), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var denied, allowed int
	for _, en := range entries {
		if en.Box != e.box {
			t.Errorf("log entry for box %q", en.Box)
		}
		if en.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	if denied < 4 || allowed < 3 {
		t.Errorf("egress log has %d denied and %d allowed lines", denied, allowed)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// writeExpiring stores an approval that expires after d, written as the
// file format says (the CLI's shortest scope is 10 minutes).
func writeExpiring(t *testing.T, s *approval.Store, entry string, d time.Duration) time.Time {
	t.Helper()
	all, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	all = append(all, approval.Approval{Entry: entry, Scope: approval.ScopeOnce, Added: now, Expires: now.Add(d), Actor: audit.ActorCLI})
	b, err := json.Marshal(map[string]any{"version": 1, "box": "x", "approvals": all})
	if err != nil {
		t.Fatal(err)
	}
	tmp := s.Path() + ".test-tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.Path()); err != nil {
		t.Fatal(err)
	}
	return now.Add(d)
}

func TestBrokerBadConfig(t *testing.T) {
	e := setup(t, "egress = [\"repo.example.test\"]\n") // a repository may not widen egress
	writeBoxMeta(t, e, "broker")
	f, _, _ := testFactory(e, false)
	err := brokerRun(&BrokerOptions{IO: f.IO, Factory: f, Box: e.box, Listen: "127.0.0.1:0", ctx: context.Background()})
	if err == nil || !strings.Contains(err.Error(), "egress policy of box "+e.box) || !strings.Contains(err.Error(), "egress") {
		t.Fatalf("err = %v", err)
	}
}

func TestBrokerForegroundWithLog(t *testing.T) {
	e := setup(t, "")
	port := upstream(t)
	logPath := filepath.Join(t.TempDir(), "egress.jsonl")
	addr := startBroker(t, e, []string{"--listen", "127.0.0.1:0", "--allow", "api.example.test:*",
		"--allow", "*.wild.example.test:*", "--allow-range", "127.0.0.0/8", "--log", logPath}, nil)
	for host, want := range map[string]int{"api": 200, "a.wild": 200, "wild": 403, "other": 403} {
		if code, _ := proxyGet(t, addr, "http://"+host+".example.test:"+port+"/"); code != want {
			t.Errorf("%s: %d, want %d", host, code, want)
		}
	}
	entries, err := egress.ReadLog(logPath, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4 {
		t.Fatalf("%d log lines, want 4", len(entries))
	}
}

func TestBrokerFlags(t *testing.T) {
	e := setup(t, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"broker"}, "--listen is required"},
		{[]string{"broker", "--listen", "0.0.0.0:42000"}, `--listen "0.0.0.0:42000": the broker listens on a loopback IP and port only`},
		{[]string{"broker", "--listen", "localhost:42000"}, `--listen "localhost:42000"`},
		{[]string{"broker", "--listen", "192.168.5.2:42000"}, `"192.168.5.2:42000"`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--allow", "x.example.test"}, `--allow "x.example.test": a box's allow-list comes from its config and approvals`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--allow-range", "127.0.0.0/8"}, `--allow-range "127.0.0.0/8" cannot be used with --box`},
		{[]string{"broker", "--box", "b", "--listen", "127.0.0.1:1", "--log", "x"}, `--log "x" cannot be used with --box`},
		{[]string{"broker", "--listen", "127.0.0.1:0", "--allow", "https://x.example.test/"}, `"https://x.example.test/"`},
		{[]string{"broker", "--box", "nope-123456", "--listen", "127.0.0.1:0"}, "no such box: nope-123456"},
	} {
		code, out, errOut := run(t, e, false, c.args...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d out %q err %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
}

func TestDenialAuditOncePerHostPerWindow(t *testing.T) {
	var mu sync.Mutex
	var recorded []audit.Event
	var passed int
	a := newDenialAudit(decisionFunc(func(egress.Decision) { passed++ }), func(ev audit.Event) error {
		mu.Lock()
		defer mu.Unlock()
		recorded = append(recorded, ev)
		return nil
	}, "b", discardLogger())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.now = func() time.Time { return now }
	deny := func(host string) {
		a.LogDecision(egress.Decision{Host: host, Port: 443, Reason: egress.ReasonHostNotAllowed})
	}
	deny("a.example.test")
	deny("a.example.test")
	a.LogDecision(egress.Decision{Host: "a.example.test", Port: 443, Allowed: true, Reason: egress.ReasonAllowed})
	deny("b.example.test")
	now = now.Add(auditWindow - time.Second)
	deny("a.example.test")
	now = now.Add(time.Second)
	deny("a.example.test")
	if passed != 6 {
		t.Errorf("%d decisions passed on, want 6", passed)
	}
	var hosts []string
	for _, ev := range recorded {
		hosts = append(hosts, ev.Fields["host"].(string))
		if ev.Kind != audit.KindEgressDenied || ev.Box != "b" || ev.Fields["port"] != 443 || ev.Fields["reason"] != "host-not-allowed" {
			t.Errorf("event %+v", ev)
		}
	}
	if got := strings.Join(hosts, " "); got != "a.example.test b.example.test a.example.test" {
		t.Errorf("audited %s", got)
	}

	// A flood of distinct names is bounded.
	recorded = nil
	for i := range maxAuditHosts + 100 {
		deny(fmt.Sprintf("h%d.example.test", i))
	}
	if len(recorded) > maxAuditHosts {
		t.Errorf("%d audit events for a flood, want at most %d", len(recorded), maxAuditHosts)
	}
}

type decisionFunc func(egress.Decision)

func (f decisionFunc) LogDecision(d egress.Decision) { f(d) }

// TestBrokerHelperProcess is not a test: TestBrokerExitsOnSIGTERM runs
// the test binary with it to get a real corral broker process.
func TestBrokerHelperProcess(t *testing.T) {
	args := os.Getenv("CORRAL_BROKER_HELPER_ARGS")
	if args == "" {
		t.Skip("helper process")
	}
	f := &Factory{IO: System(), Layout: paths.Default, Getenv: os.Getenv}
	if code := Run(f, strings.Fields(args)); code != 0 {
		t.Fatalf("corral broker exited %d", code)
	}
}

func TestBrokerExitsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	e := setup(t, "")
	writeBoxMeta(t, e, "broker")
	for name, args := range map[string]string{
		"foreground": "broker --listen 127.0.0.1:0 --allow api.example.test",
		"box":        "broker --box " + e.box + " --listen 127.0.0.1:0",
	} {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerHelperProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "CORRAL_BROKER_HELPER_ARGS="+args, paths.EnvHome+"="+e.home)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			addr := ""
			for addr == "" && sc.Scan() {
				addr, _ = strings.CutPrefix(sc.Text(), "corral broker: listening on ")
			}
			if addr == "" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("broker did not report its address")
			}
			go io.Copy(io.Discard, stderr)
			// Denied: the system resolver is not asked for an unlisted name.
			if code, reason := proxyGet(t, addr, "http://other.example.test/"); code != http.StatusForbidden || reason != "host-not-allowed" {
				t.Errorf("got %d %q", code, reason)
			}
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err := <-waited:
				if err != nil {
					t.Errorf("broker exit after SIGTERM: %v", err)
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				t.Fatal("broker still running 15s after SIGTERM")
			}
		})
	}
}
