package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newBox makes a state dir and a project with corralToml as its
// .corral.toml ("" for none), and records its box as `corral up` would.
func newBox(t testing.TB, corralToml string) (paths.Layout, string) {
	t.Helper()
	root := t.TempDir()
	l := paths.Layout{Home: filepath.Join(root, "h")}
	proj := filepath.Join(root, "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if corralToml != "" {
		if err := os.WriteFile(filepath.Join(proj, config.ProjectFile), []byte(corralToml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	proj, _ = filepath.EvalSymlinks(proj)
	p, err := project.Resolve(proj, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: p.Box, Project: proj, Network: "broker", BrokerPort: 42001}); err != nil {
		t.Fatal(err)
	}
	return l, p.Box
}

var linux = config.Platform{OS: "linux", Arch: "amd64"}

// start runs a broker with o until the test ends, and returns its address.
func start(t *testing.T, o Options) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	o.Resolver = brokertest.Resolver{}
	o.Listening = func(a net.Addr) { addrc <- a.String() }
	o.Logger = discard()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
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

// waitStatus polls until target answers want through the proxy. The
// bound is generous for a loaded machine; the time taken is returned.
func waitStatus(t *testing.T, addr, target string, want int) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		code, _ := brokertest.ProxyGet(t, addr, target)
		if code == want {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("GET %s: still %d after 10s, want %d", target, code, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBoxBrokerLive(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := func(host string) string { return "http://" + host + ".example.test:" + port + "/" }

	// Denied, with one audit line however often it is retried.
	for range 3 {
		if code, reason := brokertest.ProxyGet(t, addr, target("api")); code != http.StatusForbidden || reason != "host-not-allowed" {
			t.Fatalf("before allow: %d %q", code, reason)
		}
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: name})
	if err != nil {
		t.Fatal(err)
	}
	wantPort, _ := strconv.Atoi(port)
	if len(evs) != 1 || evs[0].Kind != audit.KindEgressDenied || evs[0].Fields["host"] != "api.example.test" ||
		evs[0].Fields["port"] != float64(wantPort) || evs[0].Fields["reason"] != "host-not-allowed" {
		t.Fatalf("audit events %+v", evs)
	}

	// An approval makes it pass without a restart.
	if _, err := approval.Allow(l, name, "api.example.test:*", approval.ScopeAlways, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	took := waitStatus(t, addr, target("api"), http.StatusOK)
	t.Logf("approval applied after %v", took)

	// An approval that expires is dropped by the timer, with no file change.
	s, err := approval.Open(l, name)
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
	trusted := l.ProjectConfig(name)
	if err := os.WriteFile(trusted, []byte("egress = [\"cfg.example.test:*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, addr, target("cfg"), http.StatusOK)
	if err := os.WriteFile(trusted, []byte("egress = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Allow(l, name, "late.example.test:*", approval.ScopeOnce, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, addr, target("late"), http.StatusOK)
	if code, _ := brokertest.ProxyGet(t, addr, target("cfg")); code != http.StatusOK {
		t.Errorf("broken config dropped the last good one: %d", code)
	}

	// Revoking denies again.
	if _, err := approval.Revoke(l, name, "api.example.test:*"); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, addr, target("api"), http.StatusForbidden)

	// Every decision is in the box's egress log: allowed ones line by line,
	// repeated denials of one destination as its first line (their count
	// follows when the aggregation interval ends; see egress.DecisionLog).
	entries, err := egress.ReadLog(l.EgressLog(name), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var denied, allowed int
	for _, en := range entries {
		if en.Box != name {
			t.Errorf("log entry for box %q", en.Box)
		}
		if en.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	if denied < 1 || allowed < 3 {
		t.Errorf("egress log has %d denied and %d allowed lines", denied, allowed)
	}
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
	all = append(all, approval.Approval{Entry: entry, Scope: approval.ScopeFor, Added: now, Expires: now.Add(d), Actor: audit.ActorCLI})
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

func TestBoxBrokerBadConfig(t *testing.T) {
	l, name := newBox(t, "git_tokens = [\"github.com\"]\n") // a repository may not set git_tokens
	err := Run(context.Background(), Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "egress policy of box "+name) || !strings.Contains(err.Error(), "egress") {
		t.Fatalf("err = %v", err)
	}
}

func TestStandaloneBrokerWithLog(t *testing.T) {
	port := brokertest.Upstream(t)
	logPath := filepath.Join(t.TempDir(), "egress.jsonl")
	addr := start(t, Options{Listen: "127.0.0.1:0", Allow: []string{"api.example.test:*", "*.wild.example.test:*"},
		AllowRanges: []string{"127.0.0.0/8"}, LogFile: logPath})
	for host, want := range map[string]int{"api": 200, "a.wild": 200, "wild": 403, "other": 403} {
		if code, _ := brokertest.ProxyGet(t, addr, "http://"+host+".example.test:"+port+"/"); code != want {
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

func TestAllowListWithBrokenConfig(t *testing.T) {
	l, name := newBox(t, "")
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := approval.Allow(l, name, "api.example.test", approval.ScopeAlways, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte("egress = [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rules, err := AllowList(l, name, m.Project, linux, time.Now())
	if err == nil {
		t.Error("a broken config: no error")
	}
	if len(rules) != 1 || rules[0].Entry != "api.example.test" {
		t.Errorf("rules %+v, want the approval alone", rules)
	}
}

// TestPolicyFromTrustedLayer: the trusted layer's egress entries, hosts
// and ranges in one list, make the broker's policy in their canonical
// form, a range with blanks around it included (the config accepts it; the
// broker once split ranges off by a stricter parse and refused the whole
// config), an IP literal in no range stays refused, and a range a once-
// approval's policy needs is there too.
func TestPolicyFromTrustedLayer(t *testing.T) {
	l, name := newBox(t, "")
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	mustDo(t, os.WriteFile(l.ProjectConfig(name), []byte(`egress = ["API.example.test.", " 127.0.0.0/8 ", "*.example.test:*", "fd00:1:2::/48"]`+"\n"), 0o600))
	if _, err := approval.Allow(l, name, "once.example.test", approval.ScopeOnce, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	bp, err := newBoxPolicy(l, name, m.Project, linux, nil, discard())
	if err != nil {
		t.Fatal(err)
	}
	p, once, err := bp.load()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.String(), "api.example.test, *.example.test:*, range 127.0.0.0/8, range fd00:1:2::/48"; !strings.HasSuffix(got, ", "+want) {
		t.Errorf("policy %q, want the agent's hosts, then %q", got, want)
	}
	for _, c := range []struct {
		host string
		want bool
	}{{"127.0.0.1", true}, {"10.0.0.1", false}, {"api.example.test", true}} {
		if d := p.Decide(egress.Request{Kind: egress.KindConnect, Host: c.host, Port: 443}); d.Allowed != c.want {
			t.Errorf("%s: allowed %v (%s), want %v", c.host, d.Allowed, d.Reason, c.want)
		}
	}
	if len(once) != 1 || once[0].Policy.String() != "once.example.test, range 127.0.0.0/8, range fd00:1:2::/48" {
		t.Errorf("once rules %+v", once)
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
	}, "b", discard())
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

	// The denial that ends a hold is recorded, marked, even within the
	// window of its host.
	a.LogDecision(egress.Decision{Host: "a.example.test", Port: 443, Reason: egress.ReasonHostNotAllowed, Held: 30 * time.Second})
	if ev := recorded[len(recorded)-1]; len(recorded) != 4 || ev.Fields["held_ms"] != int64(30000) || ev.Fields["host"] != "a.example.test" {
		t.Errorf("held denial audited as %+v (%d events)", ev, len(recorded))
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

func TestOptionsCheck(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{}, "--listen is required"},
		{Options{Listen: "0.0.0.0:42000"}, `--listen "0.0.0.0:42000": the broker listens on a loopback IP and port only`},
		{Options{Listen: "localhost:42000"}, `--listen "localhost:42000"`},
		{Options{Listen: "192.168.5.2:42000"}, `"192.168.5.2:42000"`},
		{Options{Box: "b", Listen: "127.0.0.1:1", Allow: []string{"x.example.test"}}, `--allow "x.example.test": a box's allow-list comes from its config and approvals`},
		{Options{Box: "b", Listen: "127.0.0.1:1", AllowRanges: []string{"127.0.0.0/8"}}, `--allow-range "127.0.0.0/8" cannot be used with --box`},
		{Options{Box: "b", Listen: "127.0.0.1:1", LogFile: "x"}, `--log "x" cannot be used with --box`},
		{Options{Listen: "[::1]:42000"}, ""},
		{Options{Box: "b", Listen: "127.0.0.1:42000"}, ""},
	} {
		err := c.o.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
}

// TestBoxCannotChangeItsOwnPolicy: the repository file is box-writable, so
// the broker reads it once, at start. Whatever the box writes there later
// (a widening file, valid or capitalised, a symlink to one, a FIFO) is not
// followed: the host's own files still reload (each step below is allowed
// through the trusted layer after the rewrite), and the host the box asked
// for stays denied.
func TestBoxCannotChangeItsOwnPolicy(t *testing.T) {
	l, name := newBox(t, "network = \"broker\"\n")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := func(host string) string { return "http://" + host + ".example.test:" + port + "/" }
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(m.Project, config.ProjectFile)
	outside := filepath.Join(t.TempDir(), "widen.toml")
	if err := os.WriteFile(outside, []byte("egress = [\"evil.example.test:*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replace := func(write func() error) {
		t.Helper()
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := write(); err != nil {
			t.Fatal(err)
		}
	}
	writeFile := func(s string) func() error {
		return func() error { return os.WriteFile(file, []byte(s), 0o600) }
	}
	for i, tc := range []struct {
		name  string
		write func() error
	}{
		{"valid but widening", writeFile("egress = [\"evil.example.test:*\"]\n")},
		{"capitalised", writeFile("EGRESS = [\"evil.example.test:*\"]\nNetwork = \"full\"\n")},
		{"symlink to a widening file", func() error { return os.Symlink(outside, file) }},
		{"fifo", func() error { return syscall.Mkfifo(file, 0o600) }},
		{"invalid", writeFile("egress = [\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			replace(tc.write)
			step := fmt.Sprintf("step%d", i)
			trusted := fmt.Sprintf("egress = [\"%s.example.test:*\"]\n", step)
			if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
				t.Fatal(err)
			}
			waitStatus(t, addr, target(step), http.StatusOK)
			if code, _ := brokertest.ProxyGet(t, addr, target("evil")); code != http.StatusForbidden {
				t.Fatalf("the box widened its own policy: evil.example.test answered %d", code)
			}
		})
	}
}
