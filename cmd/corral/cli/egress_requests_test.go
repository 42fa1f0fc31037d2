package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/paths"
)

// seedRequests records two requests of e's box as its broker does, one
// with hostile text in every box-written field.
func seedRequests(t *testing.T, e env) {
	t.Helper()
	l := paths.Layout{Home: e.home}
	must(t, boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, Network: "broker", BrokerPort: 42001}))
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	dl := egress.NewDecisionLog(e.box, w, nil)
	for _, r := range []egress.BoxRequest{
		{Time: fixedNow.Add(-10 * time.Minute), What: egress.RequestEgress, Entry: "registry.example.test", Why: "npm install needs the registry",
			Who: egress.Attribution{Exe: "node", PID: 42, Chain: "npm < bash", Session: "tests"}},
		{Time: fixedNow.Add(-5 * time.Minute), What: egress.RequestPort, Port: 3000, Why: "dev\x1b[2J server\u202e"},
	} {
		if err := dl.LogRequest(r); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEgressShowsBoxRequests(t *testing.T) {
	e := setup(t, "")
	seedRequests(t, e)
	code, out, errOut := runEgressAt(e, true, fixedNow)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"requested from inside the box (its own words; nothing is allowed until you answer):",
		`  registry.example.test  "npm install needs the registry"  10m ago`,
		"    asked by node (pid 42, npm < bash, session tests)",
		`  port 3000  "dev\\x1b[2J server\\u202e"  5m ago`,
		"answer: corral allow " + e.box + " HOST",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\u202e") {
		t.Fatalf("raw control or bidi rune reached the terminal:\n%q", out)
	}
	code, out, _ = runEgressAt(e, false, fixedNow, "--json")
	if code != 0 {
		t.Fatal(out)
	}
	var got struct {
		BoxRequests []boxRequestJSON `json:"box_requests"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.BoxRequests) != 2 || got.BoxRequests[0].Request != "port 3000" || got.BoxRequests[1].From != "box" ||
		got.BoxRequests[1].Why != "npm install needs the registry" || got.BoxRequests[1].Process != "node (pid 42, npm < bash, session tests)" {
		t.Fatalf("box_requests: %+v", got.BoxRequests)
	}

	// Deny answers one: it leaves the inbox.
	f, dout, derr := testFactory(e, false)
	if code, o, eo := execCmd(NewCmdDeny(f, nil), dout, derr, e.box, "registry.example.test"); code != 0 || o != "denied the request for registry.example.test of box "+e.box+"\n" {
		t.Fatalf("deny: %d %q %q", code, o, eo)
	}
	f, dout, derr = testFactory(e, false)
	if code, _, eo := execCmd(NewCmdDeny(f, nil), dout, derr, e.box, "*.example.test"); code == 0 {
		t.Fatalf("deny of a wildcard succeeded: %s", eo)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--json")
	got.BoxRequests = nil
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.BoxRequests) != 1 || got.BoxRequests[0].What != egress.RequestPort {
		t.Fatalf("after deny: %+v", got.BoxRequests)
	}
}

// A decision whose client named its session says so, made safe.
func TestEgressShowsDecisionSession(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	dl.LogDecision(egress.Decision{Time: fixedNow.Add(-time.Minute), Kind: egress.KindConnect, Host: "denied.example.test", Port: 443,
		Reason: egress.ReasonHostNotAllowed, Who: egress.Attribution{Session: "ab12\x1b[2J"}})
	dl.Close()
	w.Close()
	_, out, _ := runEgressAt(e, true, fixedNow, "--log")
	if !strings.Contains(out, `host-not-allowed · from session ab12\x1b[2J`) || strings.Contains(out, "\x1b") {
		t.Fatalf("log:\n%q", out)
	}
	_, out, _ = runEgressAt(e, true, fixedNow)
	if !strings.Contains(out, `host-not-allowed · from session ab12\x1b[2J`) {
		t.Fatalf("recent denials:\n%s", out)
	}
}

// TestEgressMarksThisMachine: a request for a host that names this
// computer (localhost, a loopback address) is marked "this machine" with
// what allowing it means, in the terminal and in --json; other hosts and
// ports are not.
func TestEgressMarksThisMachine(t *testing.T) {
	e := setup(t, "")
	seedRequests(t, e)
	l := paths.Layout{Home: e.home}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	if err := dl.LogRequest(egress.BoxRequest{Time: fixedNow.Add(-time.Minute), What: egress.RequestEgress, Entry: "localhost:5432",
		Why: "the tests need the database"}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	code, out, errOut := runEgressAt(e, true, fixedNow)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		`  localhost:5432 (this machine)  "the tests need the database"  1m ago`,
		"    this machine: " + egress.ThisMachineWhy,
		`  registry.example.test  "npm install needs the registry"  10m ago`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "this machine"); n != 2 {
		t.Errorf("%d marks, want the one request's two:\n%s", n, out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--json")
	var got struct {
		BoxRequests []boxRequestJSON `json:"box_requests"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	marked := map[string]bool{}
	for _, r := range got.BoxRequests {
		marked[r.Request] = r.ThisMachine
	}
	if len(marked) != 3 || !marked["localhost:5432"] || marked["registry.example.test"] || marked["port 3000"] {
		t.Errorf("this_machine: %v", marked)
	}
}

// A denial of a host on this computer is marked in the summary and the
// log; a public one is not.
func TestEgressMarksLocalDenials(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	dl.LogDecision(egress.Decision{Time: fixedNow.Add(-time.Minute), Kind: egress.KindConnect, Host: "localhost", Port: 5432,
		Reason: egress.ReasonPrivateIP})
	dl.LogDecision(egress.Decision{Time: fixedNow.Add(-time.Minute), Kind: egress.KindConnect, Host: "denied.example.test", Port: 443,
		Reason: egress.ReasonHostNotAllowed})
	dl.Close()
	w.Close()
	for _, args := range [][]string{nil, {"--log"}} {
		_, out, _ := runEgressAt(e, true, fixedNow, args...)
		if !strings.Contains(out, "localhost:5432 (this machine)") || strings.Contains(out, "denied.example.test:443 (this machine)") ||
			!strings.Contains(out, "denied.example.test:443") {
			t.Errorf("corral egress %v:\n%s", args, out)
		}
	}
}
