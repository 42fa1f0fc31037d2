package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// The backend reads a box's requests from its egress log, and its Deny
// (the menu's) answers one, as corral deny does.
func TestBackendAskedAndDeny(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	svc, _ := boxtest.Service(l, now, audit.ActorApp)
	b := &coreBackend{svc: svc}
	const name = "web-3f2a1c"
	dl, err := egress.OpenLog(l.EgressLog(name), name, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []egress.BoxRequest{
		{Time: now.Add(-time.Minute), What: egress.RequestEgress, Entry: "registry.example.test", Why: "npm install",
			Who: egress.Attribution{Exe: "node", PID: 42, Chain: "npm < bash", Session: "tests"}},
		{Time: now.Add(-time.Minute), What: egress.RequestPort, Port: 3000, Why: "dev server"},
	} {
		if err := dl.LogRequest(r); err != nil {
			t.Fatal(err)
		}
	}
	dl.Close()
	_, entries := b.deniedHosts(name, now)
	asked := b.askedRequests(name, entries)
	if len(asked) != 2 {
		t.Fatalf("asked: %+v", asked)
	}
	for _, r := range asked {
		if r.Request == "registry.example.test" && r.Who != "node (pid 42, npm < bash, session tests)" {
			t.Errorf("process: %q", r.Who)
		}
	}
	if err := b.Deny(context.Background(), name, "registry.example.test"); err != nil {
		t.Fatal(err)
	}
	if asked := b.askedRequests(name, entries); len(asked) != 1 || !asked[0].IsPort {
		t.Fatalf("after Deny: %+v", asked)
	}
}

// A request's notification carries its reason and process, made safe;
// only a host gets Allow actions.
func TestRequestNotification(t *testing.T) {
	n := requestNotification("web", BoxRequest{Request: "registry.example.test", Why: "needs\x1b[2J it\u202e", Who: "node\x07 (pid 1)"})
	if n.Kind != notify.KindDenied || n.Host != "registry.example.test" {
		t.Errorf("host request: %+v", n)
	}
	if !strings.Contains(n.Body, `node\x07 (pid 1) in web asks for registry.example.test: “needs\x1b[2J it\u202e”`) {
		t.Errorf("body %q", n.Body)
	}
	for _, s := range []string{n.Title, n.Body} {
		if strings.ContainsFunc(s, display.Unsafe) {
			t.Errorf("unsafe rune in %q", s)
		}
	}
	if w := requestNotification("web", BoxRequest{Request: "*.example.test", Why: "x"}); w.Kind != notify.KindInfo {
		t.Errorf("a wildcard request offers Allow: %+v", w)
	}
	p := requestNotification("web", BoxRequest{Request: "port 3000", IsPort: true, Why: "dev"})
	if p.Kind != notify.KindInfo || !strings.Contains(p.Body, "corral port web") {
		t.Errorf("port request: %+v", p)
	}
	if strings.Contains(n.Title+n.Body+p.Title+p.Body, "this machine") {
		t.Errorf("marked as this machine: %+v %+v", n, p)
	}
	// A host on this computer says so, in the title and the body, and
	// Allow still grants the host asked for.
	l := requestNotification("web", BoxRequest{Request: "localhost:5432", Why: "db"})
	if l.Host != "localhost:5432" || l.Title != "web asks to reach localhost:5432 (this machine)" || !strings.Contains(l.Body, egress.ThisMachineNotice+" Allow it?") {
		t.Errorf("local request: %+v", l)
	}
}

// A denial's notification names the host and who says they asked, made
// safe; a host on this computer is marked, and Allow grants what was
// denied either way.
func TestDenialNotification(t *testing.T) {
	n := denialNotification("web", menu.DeniedHost{Host: "api.example.test", Port: 443, Who: "session ab\x1b[2J"})
	if n.Host != "api.example.test" || n.Title != "web was blocked from api.example.test" ||
		n.Body != `session ab\x1b[2J in the box web tried to reach api.example.test (port 443). Allow it?` {
		t.Errorf("denial: %+v", n)
	}
	l := denialNotification("web", menu.DeniedHost{Host: "localhost", Port: 3000})
	if l.Host != "localhost:3000" || l.Title != "web was blocked from localhost (this machine)" ||
		l.Body != "The box web tried to reach localhost (port 3000). "+egress.ThisMachineNotice+" Allow it?" {
		t.Errorf("local denial: %+v", l)
	}
}
