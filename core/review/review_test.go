package review

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// fixture writes one box's logs: two sessions; the second made an allowed
// and a denied request, asked for a host with a hostile reason, used a
// credential, was granted an entry, had a .git refused; a file changed in
// its time and one before it.
func fixture(t *testing.T) (paths.Layout, time.Time) {
	t.Helper()
	dir := t.TempDir()
	l := paths.Layout{Home: filepath.Join(dir, "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(dir, "proj")
	must(t, os.MkdirAll(filepath.Join(proj, "src"), 0o755))
	must(t, boxmeta.Write(l, boxmeta.Meta{Name: "web-1", Project: proj, Network: config.NetworkBroker, VMType: config.VMTypeQEMU}))
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	al, err := audit.Open(l.AuditLog())
	must(t, err)
	defer al.Close()
	rec := func(at time.Duration, ev audit.Event) {
		ev.Time, ev.Box = t0.Add(at), "web-1"
		must(t, al.Record(ev))
	}
	rec(0, audit.Event{Kind: audit.KindSessionStart, Fields: map[string]any{"session": "aaaa11112222", "agent": "shell"}})
	rec(time.Minute, audit.Event{Kind: audit.KindSessionEnd, Fields: map[string]any{"session": "aaaa11112222", "exit": 0}})
	rec(time.Hour, audit.Event{Kind: audit.KindSessionStart, Fields: map[string]any{"session": "bbbb33334444", "agent": "claude"}})
	rec(time.Hour+time.Minute, audit.Event{Kind: audit.KindAllow, Actor: audit.ActorCLI, Fields: map[string]any{"host": "api.example.com"}})
	rec(time.Hour+2*time.Minute, audit.Event{Kind: audit.KindCredentialUse, Fields: map[string]any{"credential": "github", "uses": 3}})
	rec(time.Hour+3*time.Minute, audit.Event{Kind: audit.KindGitNameRefused, Fields: map[string]any{"call": "mkdirat", "path": "/p/x/.git\x1b[31m|", "why": "a .git name in the work tree"}})
	rec(2*time.Hour, audit.Event{Kind: audit.KindSessionEnd, Fields: map[string]any{"session": "bbbb33334444", "exit": 2}})
	rec(3*time.Hour, audit.Event{Kind: audit.KindAllow, Fields: map[string]any{"host": "later.example.com"}})

	dl, err := egress.OpenLog(l.EgressLog("web-1"), "web-1", nil)
	must(t, err)
	for _, d := range []egress.Decision{
		{Time: t0.Add(30 * time.Second), Kind: egress.KindConnect, Host: "first.example.com", Port: 443, Allowed: true, Reason: egress.ReasonAllowed},
		{Time: t0.Add(time.Hour + 10*time.Second), Kind: egress.KindConnect, Host: "api.example.com", Port: 443, Allowed: true, Reason: egress.ReasonAllowed},
		{Time: t0.Add(time.Hour + 20*time.Second), Kind: egress.KindConnect, Host: "evil.example.net", Port: 443, Reason: egress.ReasonHostNotAllowed},
	} {
		dl.LogDecision(d)
	}
	dl.Flush(true)
	must(t, dl.Close())
	// Session markers and the request, in time order with the decisions.
	raw := []egress.Entry{
		{Time: t0, Box: "web-1", Kind: egress.KindSessionStart, Session: "aaaa11112222"},
		{Time: t0.Add(time.Minute), Box: "web-1", Kind: egress.KindSessionEnd, Session: "aaaa11112222"},
		{Time: t0.Add(time.Hour), Box: "web-1", Kind: egress.KindSessionStart, Session: "bbbb33334444"},
		{Time: t0.Add(time.Hour + 15*time.Second), Box: "web-1", Kind: egress.KindRequest, What: egress.RequestEgress, Request: "pkg.example.org", Why: "need\u202e it | now", Who: &egress.Attribution{Exe: "/usr/bin/curl", PID: 42}},
		{Time: t0.Add(2 * time.Hour), Box: "web-1", Kind: egress.KindSessionEnd, Session: "bbbb33334444"},
	}
	b, _ := os.ReadFile(l.EgressLog("web-1"))
	var lines []egress.Entry
	for _, ln := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e egress.Entry
		must(t, json.Unmarshal([]byte(ln), &e))
		lines = append(lines, e)
	}
	all := append(lines, raw...)
	sortEntries(all)
	var out strings.Builder
	for _, e := range all {
		j, _ := json.Marshal(e)
		out.Write(j)
		out.WriteByte('\n')
	}
	must(t, os.WriteFile(l.EgressLog("web-1"), []byte(out.String()), 0o600))
	for _, f := range []struct {
		name string
		at   time.Time
	}{{"src/main.go", t0.Add(time.Hour + 5*time.Minute)}, {"README.md", t0.Add(-time.Hour)}} {
		p := filepath.Join(proj, f.name)
		must(t, os.WriteFile(p, []byte("x\n"), 0o644))
		must(t, os.Chtimes(p, f.at, f.at))
	}
	return l, t0
}

func sortEntries(es []egress.Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Time.Before(es[j-1].Time); j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestReviewLastSession(t *testing.T) {
	l, t0 := fixture(t)
	r, err := Build(l, Options{Box: "web-1", Now: t0.Add(4 * time.Hour), FileTime: modTime})
	must(t, err)
	if r.Session != "bbbb33334444" || r.Agent != "claude" || r.Exit == nil || *r.Exit != 2 {
		t.Fatalf("report: %+v", r)
	}
	hosts := map[string]bool{}
	for _, e := range r.Egress {
		hosts[e.Host] = e.Allowed
	}
	if len(hosts) != 2 || !hosts["api.example.com"] || hosts["evil.example.net"] {
		t.Errorf("egress: %+v (the first session's host must not be in it)", r.Egress)
	}
	kinds := []string{}
	for _, ev := range r.Events {
		kinds = append(kinds, string(ev.Kind))
	}
	if strings.Join(kinds, " ") != "allow credential-use git-name-refused" {
		t.Errorf("events: %v", kinds)
	}
	if len(r.Files) != 1 || r.Files[0].Path != "src/main.go" {
		t.Errorf("files: %+v", r.Files)
	}
	if len(r.Requests) != 1 {
		t.Errorf("requests: %+v", r.Requests)
	}
	md := r.Markdown(time.UTC)
	for _, bad := range []string{"\x1b", "\u202e"} {
		if strings.Contains(md, bad) {
			t.Errorf("the Markdown holds %q unescaped", bad)
		}
	}
	golden := filepath.Join("testdata", "last.md")
	if *update {
		must(t, os.WriteFile(golden, []byte(md), 0o644))
	}
	want, err := os.ReadFile(golden)
	must(t, err)
	if md != string(want) {
		t.Errorf("Markdown differs from %s (go test -update):\n%s", golden, md)
	}
}

func TestReviewBySessionAndMissing(t *testing.T) {
	l, t0 := fixture(t)
	r, err := Build(l, Options{Box: "web-1", Session: "aaaa", Now: t0.Add(4 * time.Hour), FileTime: modTime})
	must(t, err)
	if r.Session != "aaaa11112222" || len(r.Egress) != 1 || r.Egress[0].Host != "first.example.com" || len(r.Files) != 0 {
		t.Errorf("first session: %+v", r)
	}
	if _, err := Build(l, Options{Box: "web-1", Session: "cccc"}); err == nil || !strings.Contains(err.Error(), "no such session") {
		t.Errorf("a missing session: %v", err)
	}
}

// TestReviewHTML: the page is self-contained (no script, no external
// resource) and shows every box-made string escaped.
func TestReviewHTML(t *testing.T) {
	l, t0 := fixture(t)
	r, err := Build(l, Options{Box: "web-1", Now: t0.Add(4 * time.Hour), FileTime: modTime})
	must(t, err)
	r.Files = append(r.Files, File{Path: "<script>alert(1)</script>.txt"})
	page, err := r.HTML()
	must(t, err)
	for _, bad := range []string{"<script", "\x1b", "\u202e", "http://", "https://", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, want := range []string{"evil.example.net", "&lt;script&gt;alert(1)&lt;/script&gt;.txt", "git-name-refused", "default-src &#39;none&#39;", "default-src 'none'"} {
		if !strings.Contains(page, want) && !strings.Contains(want, "&#39;") {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// modTime stands in for the change time, which a test cannot set.
func modTime(fi fs.FileInfo) time.Time { return fi.ModTime() }

// TestChangeTimeIsTheHosts: a file whose modification time the box set
// into the past is still listed by its change time.
func TestChangeTimeIsTheHosts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(p, []byte("x"), 0o644))
	old := time.Now().Add(-48 * time.Hour)
	must(t, os.Chtimes(p, old, old))
	fi, err := os.Stat(p)
	must(t, err)
	if ct := changeTime(fi); time.Since(ct) > time.Minute {
		t.Errorf("change time %v follows the forged modification time", ct)
	}
}
