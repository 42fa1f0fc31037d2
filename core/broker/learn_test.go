package broker

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/egress"
)

// TestLearnExpiry drives a box's policy with a fake clock: before the
// learning window it enforces, inside it it learns (and the window's end
// is the next expiry the broker wakes for), after it, and after an early
// end, it enforces again.
func TestLearnExpiry(t *testing.T) {
	l, name := newBox(t, "")
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := newBoxPolicy(l, name, m.Project, linux, nil, discard())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := start.Add(-time.Minute)
	bp.now = func() time.Time { return now }
	learning := func() bool {
		t.Helper()
		p, _, err := bp.load()
		if err != nil {
			t.Fatal(err)
		}
		return p.IsLearning()
	}
	if learning() {
		t.Fatal("a box that never learned learns")
	}
	lr, err := approval.StartLearning(l, name, 30*time.Minute, start, audit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if learning() {
		t.Error("learning before its start")
	}
	now = start.Add(10 * time.Minute)
	if !learning() {
		t.Error("not learning inside the window")
	}
	if next := bp.nextExpiry(); !next.Equal(lr.Until) {
		t.Errorf("next expiry %v, want the window's end %v", next, lr.Until)
	}
	p, _, _ := bp.load()
	d := p.Decide(egress.Request{Kind: egress.KindConnect, Host: "new.example.test", Port: 443})
	if !d.Allowed || d.Reason != egress.ReasonLearning {
		t.Errorf("inside the window: %+v", d)
	}
	now = lr.Until
	if learning() {
		t.Error("still learning when the window ended")
	}
	if next := bp.nextExpiry(); !next.IsZero() {
		t.Errorf("next expiry after the window: %v", next)
	}
	p, _, _ = bp.load()
	if d := p.Decide(egress.Request{Kind: egress.KindConnect, Host: "new.example.test", Port: 443}); d.Allowed {
		t.Errorf("after the window: %+v", d)
	}

	// An early end (egress learn --apply) stops it at once.
	now = start.Add(time.Hour)
	if _, err := approval.StartLearning(l, name, 30*time.Minute, now, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if !learning() {
		t.Fatal("a second window does not learn")
	}
	if ok, err := approval.StopLearning(l, name, now.Add(time.Minute), audit.ActorCLI); !ok || err != nil {
		t.Fatalf("stop: %v %v", ok, err)
	}
	now = now.Add(2 * time.Minute)
	if learning() {
		t.Error("learning after it was ended")
	}
	// A broken file keeps the last window that loaded (here: ended).
	if err := os.WriteFile(approval.LearnPath(l, name), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if learning() {
		t.Error("a broken learning file started learning")
	}
}

// TestLearningBroker runs a box's broker whose learning window ends a
// second and a half after it starts: a host off the list answers while it
// learns, logged with reason "learning"; once the window is over the same
// host is denied without any file change (the broker's expiry timer).
func TestLearningBroker(t *testing.T) {
	l, name := newBox(t, "")
	// Outside the broker port range: a port there is the broker's own
	// ("self"), denied whatever the list says.
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "upstream") }))
	up.Listener.Close()
	up.Listener = brokertest.ListenOutsideBrokerPorts(t)
	up.Start()
	defer up.Close()
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())
	now := time.Now()
	// A window long enough for the broker to start and answer once on a
	// loaded machine (1.5 s was not: the first request came after it).
	lr := approval.Learning{Started: now.Add(-time.Minute), Until: now.Add(5 * time.Second), Actor: audit.ActorCLI}
	b, _ := json.Marshal(lr)
	if err := os.WriteFile(approval.LearnPath(l, name), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The test resolver maps *.example.test to 127.0.0.1, which only an
	// explicit range lets through, learning or not.
	addr := start(t, Options{Layout: l, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "http://new.example.test:" + port + "/"
	if code, reason := brokertest.ProxyGet(t, addr, target); code != 200 {
		if time.Now().After(lr.Until) {
			t.Fatalf("the machine took %s to start the broker and ask once: longer than the window", time.Since(now))
		}
		t.Fatalf("a host off the list while learning: %d %s", code, reason)
	}
	time.Sleep(time.Until(lr.Until) + 300*time.Millisecond)
	if code, reason := brokertest.ProxyGet(t, addr, target); code != 403 || reason != string(egress.ReasonHostNotAllowed) {
		t.Errorf("after the window: %d %s, want 403 host-not-allowed", code, reason)
	}
	entries, err := egress.ReadLog(l.EgressLog(name), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var reasons []egress.Reason
	for _, e := range entries {
		if e.IsDecision() {
			reasons = append(reasons, e.Reason)
		}
	}
	if len(reasons) != 2 || reasons[0] != egress.ReasonLearning || reasons[1] != egress.ReasonHostNotAllowed {
		t.Errorf("logged reasons %v", reasons)
	}
}
