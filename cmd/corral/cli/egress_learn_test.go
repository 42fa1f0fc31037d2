package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/paths"
)

func runEgressLearnAt(e env, tty bool, now time.Time, args ...string) (int, string, string) {
	f, out, errOut := testFactory(e, tty)
	learn := NewCmdEgressLearn(f, func(o *EgressLearnOptions) error {
		o.Now = func() time.Time { return now }
		return egressLearnRun(o)
	})
	return execCmd(learn, out, errOut, args...)
}

func TestEgressLearn(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	must(t, l.Ensure())
	must(t, boxmeta.Write(l, boxmeta.Meta{Name: e.box, Project: e.proj, Network: "broker"}))
	now := fixedNow

	code, _, errOut := runEgressLearnAt(e, true, now)
	if code == 0 || !strings.Contains(errOut, "box "+e.box+" never learned") || !strings.Contains(errOut, "hint: corral up --learn") {
		t.Fatalf("never learned: %d %s", code, errOut)
	}

	start := now.Add(-20 * time.Minute)
	if _, err := approval.StartLearning(l, e.box, 30*time.Minute, start, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	must(t, err)
	must(t, w.Append(egress.Entry{Time: start.Add(time.Minute), Box: e.box, Kind: egress.KindSessionStart, Session: "s1"}))
	dl := egress.NewDecisionLog(e.box, w, nil)
	for i, d := range []struct {
		host   string
		port   int
		reason egress.Reason
	}{
		{"api.pkgs.example.test", 443, egress.ReasonLearning},
		{"api.pkgs.example.test", 443, egress.ReasonLearning},
		{"dl.pkgs.example.test", 8443, egress.ReasonLearning},
		{"git.other.test", 443, egress.ReasonLearning},
		{"under_score.other.test", 443, egress.ReasonLearning},
		{"api.anthropic.com", 443, egress.ReasonAllowed},
	} {
		dl.LogDecision(egress.Decision{Time: start.Add(time.Duration(2+i) * time.Minute), Kind: egress.KindConnect, Host: d.host, Port: d.port,
			IP: mustAddr("93.184.216.34"), Allowed: true, Reason: d.reason})
	}
	must(t, w.Close())

	code, out, errOut := runEgressLearnAt(e, true, now)
	if code != 0 || !strings.HasPrefix(out, "box "+e.box+" is learning since 11:40, until 12:10\n\nproposed allow-list (5 connections to 2 domains):\n") ||
		!strings.Contains(out, "  example.test                 3  sessions s1\n    api.pkgs.example.test      2\n    dl.pkgs.example.test:8443  1\n") ||
		!strings.Contains(out, "    under_score.other.test     1\n") || strings.Contains(out, "not proposed") ||
		!strings.Contains(out, "to allow these and end learning: corral egress learn "+e.box+" --apply\n") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "anthropic") {
		t.Errorf("an allowed host was proposed:\n%s", out)
	}

	if _, out, _ := runEgressAt(e, true, now); !strings.Contains(out, "box "+e.box+"\nlearning until 12:10: the broker also allows public hosts off this list and logs them (corral egress learn "+e.box+")\n") {
		t.Errorf("corral egress while learning:\n%s", out)
	}
	// The session's banner while the box learns: core/box TestSessionNotices.

	code, out, errOut = runEgressLearnAt(e, false, now, "--apply", "--json", e.box)
	var got struct {
		Entries  []string
		Applied  bool
		Stopped  bool
		Learning bool
	}
	must(t, json.Unmarshal([]byte(out), &got))
	if code != 0 || !got.Applied || !got.Stopped || got.Learning ||
		strings.Join(got.Entries, " ") != "api.pkgs.example.test dl.pkgs.example.test:8443 git.other.test under_score.other.test" {
		t.Fatalf("apply: %d %+v %s", code, got, errOut)
	}
	trusted, _ := os.ReadFile(l.ProjectConfig(e.box))
	if !strings.Contains(string(trusted), "# corral egress learn 2026-05-06: learned from 2026-05-06T11:40:00Z to 2026-05-06T12:00:00Z\n"+
		"egress = [\"api.pkgs.example.test\", \"dl.pkgs.example.test:8443\", \"git.other.test\", \"under_score.other.test\"]\n") {
		t.Errorf("trusted layer:\n%s", trusted)
	}
	lr, err := approval.ReadLearning(l, e.box)
	if err != nil || lr.ActiveAt(now) {
		t.Errorf("learning still active: %+v %v", lr, err)
	}
	// The applied hosts are on the box's allow-list now.
	_, out, _ = runEgressAt(e, false, now)
	if !strings.Contains(out, "allow\tgit.other.test\tconfig\t"+l.ProjectConfig(e.box)) {
		t.Errorf("egress allow-list:\n%s", out)
	}
	_, out, _ = runEgressLearnAt(e, true, now.Add(time.Minute))
	if !strings.HasPrefix(out, "box "+e.box+" learned from 11:40 to 12:00\n") {
		t.Errorf("after apply:\n%s", out)
	}
}
