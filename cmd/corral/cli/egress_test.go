package cli

import (
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remotebox"
)

func runEgressAt(e env, tty bool, now time.Time, args ...string) (int, string, string) {
	f, out, errOut := testFactory(e, tty)
	cmd := NewCmdEgress(f, func(o *EgressOptions) error {
		o.Now = func() time.Time { return now }
		return egressRun(o)
	})
	return execCmd(cmd, out, errOut, args...)
}

// seedEgress gives e's box a global egress entry, three approvals and a
// decision log.
func seedEgress(t *testing.T, e env) paths.Layout {
	t.Helper()
	seedApprovals(t, e)
	l := paths.Layout{Home: e.home}
	if err := os.WriteFile(l.GlobalConfig(), []byte("egress = [\"pkg.example.test\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	at := func(d time.Duration) time.Time { return fixedNow.Add(-d) }
	if err := w.Append(egress.Entry{Time: at(2 * time.Hour), Box: e.box, Kind: egress.KindSessionStart, Session: "s1"}); err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	for _, d := range []struct {
		ago     time.Duration
		kind    egress.Kind
		host    string
		port    int
		allowed bool
		reason  egress.Reason
	}{
		{25 * time.Hour, egress.KindConnect, "old.example.test", 443, false, egress.ReasonHostNotAllowed},
		{90 * time.Minute, egress.KindConnect, "api.anthropic.com", 443, true, egress.ReasonAllowed},
		{30 * time.Minute, egress.KindConnect, "api.anthropic.com", 443, true, egress.ReasonAllowed},
		{20 * time.Minute, egress.KindConnect, "evil.example.test", 443, false, egress.ReasonHostNotAllowed},
		{10 * time.Minute, egress.KindHTTP, "pkg.example.test", 80, true, egress.ReasonAllowed},
		{5 * time.Minute, egress.KindConnect, "api.example.test", 8443, false, egress.ReasonPortNotAllowed},
		{3 * time.Minute, egress.KindConnect, "\x1b[31mred", 0, false, egress.ReasonMalformedAuthority},
		{2 * time.Minute, egress.KindConnect, "evil.example.test", 443, false, egress.ReasonHostNotAllowed},
		{90 * time.Second, egress.KindConnect, "evil.example.test", 443, false, egress.ReasonHostNotAllowed},
	} {
		dec := egress.Decision{Time: at(d.ago), Kind: d.kind, Host: d.host, Port: d.port, Allowed: d.allowed, Reason: d.reason}
		if d.allowed {
			dec.IP = mustAddr("127.0.0.1")
		}
		dl.LogDecision(dec)
	}
	return l
}

func TestEgressTTY(t *testing.T) {
	e := setup(t, "")
	l := seedEgress(t, e)
	code, out, errOut := runEgressAt(e, true, fixedNow)
	want := "box " + e.box + `

allow-list:
  api.anthropic.com    agent claude
  platform.claude.com  agent claude
  claude.ai            agent claude
  pkg.example.test     config ` + l.GlobalConfig() + `
  api.example.test     approval always
  *.cdn.example.test   approval session, expires in 11h
  dl.example.test:*    approval once (one connection), lapses in 7m unused

destinations in the last 24h:
  denied   evil.example.test:443  3  last 1m ago  host-not-allowed
  denied   \x1b[31mred            1  last 3m ago  malformed-authority
  denied   api.example.test:8443  1  last 5m ago  port-not-allowed
  allowed  api.anthropic.com:443  2  last 30m ago
  allowed  pkg.example.test:80    1  last 10m ago

recent denials:
  2026-05-06 11:40:00  connect  evil.example.test:443  host-not-allowed
  2026-05-06 11:55:00  connect  api.example.test:8443  port-not-allowed
  2026-05-06 11:57:00  connect  \x1b[31mred            malformed-authority
  2026-05-06 11:58:00  connect  evil.example.test:443  host-not-allowed
  2026-05-06 11:58:30  connect  evil.example.test:443  host-not-allowed

to allow a host: corral allow ` + e.box + ` HOST
`
	if code != 0 || errOut != "" || out != want {
		t.Errorf("code %d err %q\n%s", code, errOut, diffLines(out, want))
	}
	// The box can be named instead of found from -C.
	e2 := e
	e2.proj = t.TempDir()
	if _, out2, _ := runEgressAt(e2, true, fixedNow, e.box); out2 != out {
		t.Errorf("egress BOX differs from -C:\n%s", diffLines(out2, out))
	}
}

func TestEgressNonTTYAndJSON(t *testing.T) {
	e := setup(t, "")
	l := seedEgress(t, e)
	code, out, _ := runEgressAt(e, false, fixedNow, "--since", "15m")
	want := "" +
		"allow\tapi.anthropic.com\tagent\tclaude\t\n" +
		"allow\tplatform.claude.com\tagent\tclaude\t\n" +
		"allow\tclaude.ai\tagent\tclaude\t\n" +
		"allow\tpkg.example.test\tconfig\t" + l.GlobalConfig() + "\t\n" +
		"allow\tapi.example.test\tapproval\talways\t\n" +
		"allow\t*.cdn.example.test\tapproval\tsession\t2026-05-06T23:57:00Z\n" +
		"allow\tdl.example.test:*\tapproval\tonce\t2026-05-06T12:07:00Z\n" +
		"dest\tdenied\tevil.example.test\t443\t2\t2026-05-06T11:58:30Z\thost-not-allowed\n" +
		"dest\tdenied\t\"\\x1b[31mred\"\t0\t1\t2026-05-06T11:57:00Z\tmalformed-authority\n" +
		"dest\tdenied\tapi.example.test\t8443\t1\t2026-05-06T11:55:00Z\tport-not-allowed\n" +
		"dest\tallowed\tpkg.example.test\t80\t1\t2026-05-06T11:50:00Z\tallowed\n" +
		"deny\t2026-05-06T11:55:00Z\tconnect\tapi.example.test\t8443\tport-not-allowed\n" +
		"deny\t2026-05-06T11:57:00Z\tconnect\t\"\\x1b[31mred\"\t0\tmalformed-authority\n" +
		"deny\t2026-05-06T11:58:00Z\tconnect\tevil.example.test\t443\thost-not-allowed\n" +
		"deny\t2026-05-06T11:58:30Z\tconnect\tevil.example.test\t443\thost-not-allowed\n"
	if code != 0 || out != want {
		t.Errorf("code %d\n%s", code, diffLines(out, want))
	}

	code, out, _ = runEgressAt(e, true, fixedNow, "--json")
	var got struct {
		Box       string    `json:"box"`
		Since     time.Time `json:"since"`
		AllowList []struct {
			Entry, Origin, Source string
			Expires               *time.Time
		} `json:"allow_list"`
		Destinations []struct {
			Host     string    `json:"host"`
			Port     int       `json:"port"`
			Allowed  bool      `json:"allowed"`
			Count    int       `json:"count"`
			LastSeen time.Time `json:"last_seen"`
			Reason   string    `json:"reason"`
		} `json:"destinations"`
		RecentDenials []egress.Entry `json:"recent_denials"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(code, err, out)
	}
	if got.Box != e.box || !got.Since.Equal(fixedNow.Add(-24*time.Hour)) || len(got.AllowList) != 7 ||
		got.AllowList[6].Origin != "approval" || got.AllowList[6].Expires == nil ||
		len(got.Destinations) != 5 || got.Destinations[0].Host != "evil.example.test" || got.Destinations[0].Count != 3 ||
		len(got.RecentDenials) != 5 || got.RecentDenials[4].Host != "evil.example.test" {
		t.Errorf("JSON %+v", got)
	}
}

func TestEgressLog(t *testing.T) {
	e := setup(t, "")
	seedEgress(t, e)
	code, out, _ := runEgressAt(e, true, fixedNow, "--log", "--since", "1h")
	want := "" +
		"2026-05-06 11:30:00  allowed  connect  api.anthropic.com:443  127.0.0.1\n" +
		"2026-05-06 11:40:00  denied   connect  evil.example.test:443  host-not-allowed\n" +
		"2026-05-06 11:50:00  allowed  http     pkg.example.test:80    127.0.0.1\n" +
		"2026-05-06 11:55:00  denied   connect  api.example.test:8443  port-not-allowed\n" +
		"2026-05-06 11:57:00  denied   connect  \\x1b[31mred            malformed-authority\n" +
		"2026-05-06 11:58:00  denied   connect  evil.example.test:443  host-not-allowed\n" +
		"2026-05-06 11:58:30  denied   connect  evil.example.test:443  host-not-allowed\n"
	if code != 0 || out != want {
		t.Errorf("code %d\n%s", code, diffLines(out, want))
	}
	_, out, _ = runEgressAt(e, true, fixedNow, "--log", "--since", "3h")
	if !strings.HasPrefix(out, "2026-05-06 10:00:00  session-start  s1\n") {
		t.Errorf("session marker:\n%s", out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--log", "--since", "2m")
	want = `{"schema":"corral.egress-decision/v1","time":"2026-05-06T11:58:00Z","box":"` + e.box + `","kind":"connect","host":"evil.example.test","port":443,"ip":"","allowed":false,"reason":"host-not-allowed"}` + "\n" +
		`{"schema":"corral.egress-decision/v1","time":"2026-05-06T11:58:30Z","box":"` + e.box + `","kind":"connect","host":"evil.example.test","port":443,"ip":"","allowed":false,"reason":"host-not-allowed"}` + "\n"
	if out != want {
		t.Errorf("non-TTY log:\n%s", diffLines(out, want))
	}
}

func TestEgressEmptyAndErrors(t *testing.T) {
	e := setup(t, "")
	code, out, errOut := runEgressAt(e, true, fixedNow)
	want := "box " + e.box + `

allow-list:
  api.anthropic.com    agent claude
  platform.claude.com  agent claude
  claude.ai            agent claude

destinations in the last 24h:
  none

recent denials:
  none
`
	if code != 0 || out != want || errOut != "" {
		t.Errorf("code %d err %q\n%s", code, errOut, diffLines(out, want))
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"nope-123456"}, "corral: no such box: nope-123456\nhint: corral ls lists the boxes\n"},
		{[]string{"--since", "-1h"}, "--since -1h0m0s: want a positive duration"},
		{[]string{"a", "b"}, "accepts at most 1 arg(s), received 2"},
	} {
		code, _, errOut := runEgressAt(e, false, fixedNow, c.args...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: code %d err %q, want %q", c.args, code, errOut, c.want)
		}
	}
}

func TestEgressConfigThatDoesNotLoad(t *testing.T) {
	e := setup(t, "egress = [\"repo.example.test\"]\nsudo = true\n") // sudo: a repository may not
	seedApprovals(t, e)
	code, out, errOut := runEgressAt(e, false, fixedNow)
	if code != 0 || !strings.HasPrefix(errOut, "warning: the allow-list below lacks the config, which does not load: ") {
		t.Errorf("code %d err %q", code, errOut)
	}
	// The repository's egress is a pending request, never on the allow-list.
	if !strings.HasPrefix(out, "allow\tapi.example.test\tapproval\talways\t\n") || strings.Contains(out, "allow\trepo.example.test") ||
		!strings.Contains(out, "request\trepo.example.test\tpending\t") {
		t.Errorf("out:\n%s", out)
	}
}

// diffLines shows got and want line by line.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		mark := "  "
		if gl != wl {
			mark = "! "
		}
		b.WriteString(mark + "got:  " + gl + "\n")
		if gl != wl {
			b.WriteString("  want: " + wl + "\n")
		}
	}
	return b.String()
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestEgressSession(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) time.Time { return fixedNow.Add(-d) }
	dl := egress.NewDecisionLog(e.box, w, nil)
	deny := func(ago time.Duration, host string) {
		dl.LogDecision(egress.Decision{Time: at(ago), Kind: egress.KindConnect, Host: host, Port: 443, Reason: egress.ReasonHostNotAllowed})
	}
	mark := func(ago time.Duration, k egress.Kind, id string) {
		if err := w.Append(egress.Entry{Time: at(ago), Box: e.box, Kind: k, Session: id}); err != nil {
			t.Fatal(err)
		}
	}
	// Two days ago: beyond the default --since, which --session lifts.
	mark(48*time.Hour, egress.KindSessionStart, "s1")
	deny(47*time.Hour, "one.example.test")
	mark(46*time.Hour, egress.KindSessionEnd, "s1")
	deny(time.Hour, "between.example.test")
	mark(30*time.Minute, egress.KindSessionStart, "s2")
	deny(20*time.Minute, "two.example.test")
	w.Close()

	code, out, errOut := runEgressAt(e, true, fixedNow, "--log", "--session", "s1")
	want := "" +
		"2026-05-04 12:00:00  session-start  s1\n" +
		"2026-05-04 13:00:00  denied         connect  one.example.test:443  host-not-allowed\n" +
		"2026-05-04 14:00:00  session-end    s1\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("--session s1: code %d err %q\n%s", code, errOut, diffLines(out, want))
	}
	code, out, _ = runEgressAt(e, false, fixedNow, "--json", "--session", "last")
	var got struct {
		Session      string `json:"session"`
		Destinations []struct {
			Host string `json:"host"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil {
		t.Fatalf("--json --session last: %d %v\n%s", code, err, out)
	}
	if got.Session != "s2" || len(got.Destinations) != 1 || got.Destinations[0].Host != "two.example.test" {
		t.Errorf("--session last: %+v", got)
	}
	code, _, errOut = runEgressAt(e, true, fixedNow, "--session", "nope")
	if code != 1 || !strings.Contains(errOut, `no session "nope" in the egress log of box `+e.box) {
		t.Errorf("unknown session: %d %q", code, errOut)
	}
}

func TestEgressShowsForExpiry(t *testing.T) {
	e := setup(t, "")
	l := seedEgress(t, e)
	s, err := approval.Open(l, e.box)
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return fixedNow.Add(-time.Hour) }
	if _, err := s.AddFor("tmp.example.test", 2*time.Hour, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	_, out, _ := runEgressAt(e, true, fixedNow)
	if !strings.Contains(out, "  tmp.example.test     approval for, expires in 1h\n") {
		t.Errorf("TTY output lacks the expiry:\n%s", out)
	}
	_, out, _ = runEgressAt(e, false, fixedNow, "--json")
	var got struct {
		AllowList []approval.Rule `json:"allow_list"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range got.AllowList {
		if r.Entry == "tmp.example.test" {
			found = true
			if r.Source != "for" || !r.Expires.Equal(fixedNow.Add(time.Hour)) {
				t.Errorf("JSON rule %+v", r)
			}
		}
	}
	if !found {
		t.Errorf("JSON lacks the approval:\n%s", out)
	}
	if _, out, _ = runEgressAt(e, true, fixedNow.Add(time.Hour)); strings.Contains(out, "tmp.example.test") {
		t.Errorf("listed after its end:\n%s", out)
	}
}

// TestEgressShowsHolds: a held request's outcome says how long it was held,
// so that a held-then-denied connection reads apart from an instant denial.
func TestEgressShowsHolds(t *testing.T) {
	e := setup(t, "")
	l := seedEgress(t, e)
	w, err := jsonl.Open(l.EgressLog(e.box), jsonl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dl := egress.NewDecisionLog(e.box, w, nil)
	dl.LogDecision(egress.Decision{Time: fixedNow.Add(-40 * time.Second), Kind: egress.KindConnect, Host: "held.example.test", Port: 443,
		Reason: egress.ReasonHostNotAllowed, Held: 30 * time.Second})
	dl.LogDecision(egress.Decision{Time: fixedNow.Add(-20 * time.Second), Kind: egress.KindConnect, Host: "ok.example.test", Port: 443,
		IP: mustAddr("127.0.0.1"), Allowed: true, Reason: egress.ReasonAllowed, Held: 2 * time.Second})
	w.Close()
	code, out, _ := runEgressAt(e, true, fixedNow, "--log", "--since", "45s")
	want := "" +
		"2026-05-06 11:59:20  denied   connect  held.example.test:443  host-not-allowed (held 30s)\n" +
		"2026-05-06 11:59:40  allowed  connect  ok.example.test:443    127.0.0.1 (held 2s)\n"
	if code != 0 || out != want {
		t.Errorf("code %d\n%s", code, diffLines(out, want))
	}
	_, out, _ = runEgressAt(e, true, fixedNow)
	if !strings.Contains(out, "  2026-05-06 11:59:20  connect  held.example.test:443  host-not-allowed (held 30s)\n") {
		t.Errorf("recent denials do not show the hold:\n%s", out)
	}
}

// TestEgressJSONReadByTheMenu: what `corral egress --json` prints is what
// the menu's reader of a remote host (core/remotebox) decodes: the denied
// destinations of the window, newest first, the malformed one marked.
func TestEgressJSONReadByTheMenu(t *testing.T) {
	e := setup(t, "")
	seedEgress(t, e)
	code, out, _ := runEgressAt(e, false, fixedNow, "--json")
	if code != 0 {
		t.Fatal(code)
	}
	ds, err := remotebox.DecodeEgress([]byte(out), e.box)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []remotebox.Denial{
		{Host: "evil.example.test", Port: 443, Count: 3, Last: fixedNow.Add(-90 * time.Second)},
		{Host: "\x1b[31mred", Count: 1, Last: fixedNow.Add(-3 * time.Minute), Malformed: true},
		{Host: "api.example.test", Port: 8443, Count: 1, Last: fixedNow.Add(-5 * time.Minute)},
	}
	if len(ds) != len(want) {
		t.Fatalf("denials %+v", ds)
	}
	for i := range want {
		if d := ds[i]; d.Host != want[i].Host || d.Port != want[i].Port || d.Count != want[i].Count || !d.Last.Equal(want[i].Last) || d.Malformed != want[i].Malformed {
			t.Errorf("denial %d: %+v, want %+v", i, d, want[i])
		}
	}
}
