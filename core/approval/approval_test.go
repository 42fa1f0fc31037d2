package approval

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
)

const testBox = "web-3f2a1c"

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newStore(t *testing.T) (*Store, *clock, paths.Layout) {
	t.Helper()
	l := paths.Layout{Home: t.TempDir()}
	s, err := Open(l, testBox)
	if err != nil {
		t.Fatal(err)
	}
	// Near the real time: the package-level functions use time.Now.
	c := &clock{t: time.Now().UTC().Truncate(time.Second)}
	s.Now = c.now
	return s, c, l
}

func TestPathBesideTrustedLayer(t *testing.T) {
	l := paths.Layout{Home: "/h"}
	if got := Path(l, testBox); got != "/h/projects/"+testBox+".approvals.json" {
		t.Fatalf("Path = %s", got)
	}
}

func TestOpenRejectsBadBoxName(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	for _, b := range []string{"", "../x", "a/b", ".hidden"} {
		if _, err := Open(l, b); err == nil {
			t.Errorf("Open(%q) accepted", b)
		}
	}
}

func TestScopes(t *testing.T) {
	s, c, _ := newStore(t)
	for _, x := range []struct {
		entry string
		scope Scope
	}{{"always.example.test", ScopeAlways}, {"*.Session.Example.test.", ScopeSession}, {"once.example.test:8443", ScopeOnce}} {
		if _, err := s.Add(x.entry, x.scope, audit.ActorCLI); err != nil {
			t.Fatal(err)
		}
	}
	active := func() []string {
		t.Helper()
		got, err := s.Active(c.now())
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := []string{"always.example.test", "*.session.example.test", "once.example.test:8443"}
	if got := active(); !reflect.DeepEqual(got, want) {
		t.Fatalf("active = %q, want %q", got, want)
	}
	c.advance(OnceFor - time.Second)
	if got := active(); len(got) != 3 {
		t.Fatalf("once expired early: %q", got)
	}
	c.advance(time.Second)
	if got := active(); !reflect.DeepEqual(got, want[:2]) {
		t.Fatalf("after 10m: %q", got)
	}
	c.advance(SessionMaxAge)
	if got := active(); !reflect.DeepEqual(got, want[:1]) {
		t.Fatalf("after 12h: %q", got)
	}
}

func TestClearSession(t *testing.T) {
	s, c, l := newStore(t)
	for _, sc := range Scopes {
		var err error
		if sc == ScopeFor {
			_, err = s.AddFor(string(sc)+".example.test", time.Hour, audit.ActorApp)
		} else {
			_, err = s.Add(string(sc)+".example.test", sc, audit.ActorApp)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := ClearSession(l, testBox); err != nil {
		t.Fatal(err)
	}
	got, err := s.Active(c.now())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"always.example.test", "for.example.test", "once.example.test"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after ClearSession: %q", got)
	}
}

func TestAddReplacesSameEntryAndPrunesExpired(t *testing.T) {
	s, c, _ := newStore(t)
	mustAdd(t, s, "a.example.test", ScopeOnce)
	mustAdd(t, s, "b.example.test", ScopeOnce)
	c.advance(time.Minute)
	mustAdd(t, s, "A.example.test", ScopeAlways)
	c.advance(OnceFor)
	mustAdd(t, s, "c.example.test", ScopeSession)
	all, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range all {
		got = append(got, a.Entry+"/"+string(a.Scope))
	}
	if want := []string{"a.example.test/always", "c.example.test/session"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	if !all[1].Expires.Equal(c.now().Add(SessionMaxAge)) || !all[0].Expires.IsZero() || all[0].Actor != audit.ActorCLI {
		t.Errorf("%+v", all)
	}
}

func mustAdd(t *testing.T, s *Store, e string, sc Scope) Approval {
	t.Helper()
	a, err := s.Add(e, sc, audit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAddRejectsBadValues(t *testing.T) {
	s, _, _ := newStore(t)
	for entry, want := range map[string]string{
		"10.0.0.1":                  `"10.0.0.1"`,
		"https://api.example.test/": `"https://api.example.test/"`,
		"api.example.test:99999":    `"99999"`,
		"*":                         `"*"`,
		"":                          `""`,
		"a*b.example.test":          `"a*b.example.test"`,
	} {
		_, err := s.Add(entry, ScopeAlways, audit.ActorCLI)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Add(%q) = %v, want an error naming %s", entry, err, want)
		}
	}
	if _, err := s.Add("ok.example.test", "forever", audit.ActorCLI); err == nil || !strings.Contains(err.Error(), `"forever"`) {
		t.Errorf("bad scope: %v", err)
	}
	if _, err := os.Stat(s.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rejected adds wrote the file: %v", err)
	}
}

func TestRemove(t *testing.T) {
	s, _, l := newStore(t)
	mustAdd(t, s, "a.example.test", ScopeAlways)
	mustAdd(t, s, "b.example.test:*", ScopeSession)
	a, err := Revoke(l, testBox, "B.EXAMPLE.test:*")
	if err != nil || a.Entry != "b.example.test:*" {
		t.Fatalf("Revoke = %+v, %v", a, err)
	}
	_, err = s.Remove("b.example.test:*")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(hint.Of(err), "corral allow --list "+testBox) {
		t.Fatalf("second remove: %v", err)
	}
}

func TestNoOpDoesNotRewrite(t *testing.T) {
	s, _, _ := newStore(t)
	mustAdd(t, s, "a.example.test", ScopeAlways)
	before, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if before.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", before.Mode().Perm())
	}
	if err := s.ClearSession(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("a no-op ClearSession replaced the file")
	}
}

func TestCorruptFileIsAnError(t *testing.T) {
	s, c, _ := newStore(t)
	if err := os.MkdirAll(filepath.Dir(s.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(s.Path(), []byte(`{"version":1,"approvals":[{"entry":"1.2.3.4","scope":"always"}]}`), 0o600)
	if _, err := s.Active(c.now()); err == nil || !strings.Contains(err.Error(), `"1.2.3.4"`) {
		t.Errorf("bad entry: %v", err)
	}
	os.WriteFile(s.Path(), []byte(`{"version":2,"approvals":[]}`), 0o600)
	if _, err := s.Active(c.now()); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("future version: %v", err)
	}
	os.WriteFile(s.Path(), []byte(`{`), 0o600)
	if _, err := s.Add("a.example.test", ScopeAlways, audit.ActorCLI); err == nil {
		t.Error("Add over a corrupt file succeeded and would have dropped its content")
	}
}

func TestConcurrentAddsLoseNothing(t *testing.T) {
	s, c, _ := newStore(t)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			if _, err := s.Add(fmt.Sprintf("h%d.example.test", i), ScopeAlways, audit.ActorCLI); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := s.Active(c.now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d approvals after %d concurrent adds", len(got), n)
	}
}

// TestHelperProcess is not a test: TestTwoProcesses runs the test binary
// with it to add approvals from another process.
func TestHelperProcess(t *testing.T) {
	home := os.Getenv("APPROVAL_HELPER_HOME")
	if home == "" {
		t.Skip("helper process")
	}
	prefix := os.Getenv("APPROVAL_HELPER_PREFIX")
	n, _ := strconv.Atoi(os.Getenv("APPROVAL_HELPER_N"))
	for i := range n {
		if _, err := Allow(paths.Layout{Home: home}, testBox, fmt.Sprintf("%s%d.example.test", prefix, i), ScopeAlways, audit.ActorApp); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	home := t.TempDir()
	const n = 25
	var cmds []*exec.Cmd
	for _, prefix := range []string{"p", "q"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "APPROVAL_HELPER_HOME="+home, "APPROVAL_HELPER_PREFIX="+prefix, "APPROVAL_HELPER_N="+strconv.Itoa(n))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	l := paths.Layout{Home: home}
	s, err := Open(l, testBox)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Active(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n {
		t.Fatalf("%d approvals after two processes added %d each", len(got), n)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: testBox})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2*n {
		t.Fatalf("%d audit events, want %d", len(evs), 2*n)
	}
}

func TestAllowRecordsAudit(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	a, err := Allow(l, testBox, "api.example.test", ScopeOnce, audit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	ev := evs[0]
	written, err := os.ReadFile(Path(l, testBox))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"entry": "api.example.test", "scope": "once", "expires": a.Expires.Format(time.RFC3339), audit.FieldSHA256: audit.Written(written)}
	if ev.Kind != audit.KindAllow || ev.Box != testBox || ev.Actor != audit.ActorCLI || !reflect.DeepEqual(ev.Fields, want) {
		t.Errorf("event %+v", ev)
	}
	if _, err := Allow(l, testBox, "bad entry", ScopeOnce, audit.ActorCLI); err == nil {
		t.Fatal("bad entry allowed")
	}
	if evs, _ := audit.Read(l.AuditLog(), audit.Filter{}); len(evs) != 1 {
		t.Errorf("a refused allow was audited")
	}
}

func TestAllowList(t *testing.T) {
	claude := "claude"
	res := config.Result{
		Effective: config.Effective{Config: config.Config{Agent: &claude}},
		Layers: []config.Layer{
			{Kind: config.KindDefault, Path: "default"},
			{Kind: config.KindGlobal, Path: "/h/config.toml", Config: config.Config{Egress: []string{"pkg.example.test", "claude.ai"}}},
			{Kind: config.KindTrusted, Path: "/h/projects/b.toml", Config: config.Config{Egress: []string{"*.cdn.example.test:*"}}},
		},
	}
	exp := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rules, err := AllowList(res, Toolchains{}, []Approval{
		{Entry: "api.example.test", Scope: ScopeAlways},
		{Entry: "pkg.example.test", Scope: ScopeOnce, Expires: exp},
		{Entry: "x.example.test", Scope: ScopeOnce, Expires: exp},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Rule{
		{"api.anthropic.com", OriginAgent, "claude", time.Time{}, config.RiskOK, ""},
		{"platform.claude.com", OriginAgent, "claude", time.Time{}, config.RiskOK, ""},
		{"claude.ai", OriginAgent, "claude", time.Time{}, config.RiskOK, ""},
		{"pkg.example.test", OriginConfig, "/h/config.toml", time.Time{}, config.RiskOK, ""},
		{"*.cdn.example.test:*", OriginConfig, "/h/projects/b.toml", time.Time{}, config.RiskFlagged,
			"allows every port of every name under cdn.example.test, not only the web's 80 and 443: ssh, databases and any other service listening there"},
		{"api.example.test", OriginApproval, "always", time.Time{}, config.RiskOK, ""},
		{"x.example.test", OriginApproval, "once", exp, config.RiskOK, ""},
	}
	if !reflect.DeepEqual(rules, want) {
		t.Fatalf("rules:\n%+v\nwant:\n%+v", rules, want)
	}
	if got := egress.NewPolicy(Entries(rules[:2])).String(); got != "api.anthropic.com, platform.claude.com" {
		t.Errorf("Entries = %q", got)
	}
	if got := NextExpiry([]Approval{{}, {Expires: exp.Add(time.Hour)}, {Expires: exp}}); !got.Equal(exp) {
		t.Errorf("NextExpiry = %v", got)
	}
	bad := "nope"
	res.Config.Agent = &bad
	if _, err := AllowList(res, Toolchains{}, nil); err == nil {
		t.Error("unknown agent accepted")
	}
}

// TestAllowNeedsItsAuditRecord: when the audit log cannot be written, the
// approval is not saved either.
func TestAllowNeedsItsAuditRecord(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := os.MkdirAll(l.AuditLog(), 0o700); err != nil { // a directory: the log cannot open
		t.Fatal(err)
	}
	if _, err := Allow(l, "web-3f2a1c", "api.example.test", ScopeAlways, audit.ActorCLI); err == nil {
		t.Fatal("Allow succeeded without its audit record")
	}
	s, err := Open(l, "web-3f2a1c")
	if err != nil {
		t.Fatal(err)
	}
	if all, err := s.All(); err != nil || len(all) != 0 {
		t.Errorf("approvals after a failed record: %v, %v", all, err)
	}
	if err := os.Remove(l.AuditLog()); err != nil {
		t.Fatal(err)
	}
	if _, err := Allow(l, "web-3f2a1c", "api.example.test", ScopeAlways, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if all, _ := s.All(); len(all) != 1 {
		t.Errorf("approvals %v", all)
	}
}

func TestAddForExpires(t *testing.T) {
	s, c, _ := newStore(t)
	a, err := s.AddFor("api.example.test", 2*time.Hour, audit.ActorCLI)
	if err != nil {
		t.Fatal(err)
	}
	if a.Scope != ScopeFor || !a.Expires.Equal(c.now().UTC().Add(2*time.Hour)) {
		t.Fatalf("approval %+v", a)
	}
	c.advance(2*time.Hour - time.Second)
	if got, _ := s.Active(c.now()); !reflect.DeepEqual(got, []string{"api.example.test"}) {
		t.Fatalf("before its end: %q", got)
	}
	c.advance(time.Second)
	if got, _ := s.Active(c.now()); len(got) != 0 {
		t.Fatalf("after its end: %q", got)
	}
}

func TestCheckFor(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string // "" accepts
	}{
		{time.Minute, ""}, {2 * time.Hour, ""}, {MaxFor, ""},
		{0, "must be positive"}, {-time.Hour, "must be positive"},
		{30 * time.Second, "shorter than 1m0s"}, {MaxFor + time.Second, "longer than 30 days"},
	} {
		err := CheckFor(tc.d)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckFor(%s) = %v, want %q", tc.d, err, tc.want)
		}
	}
	s, _, _ := newStore(t)
	if _, err := s.Add("api.example.test", ScopeFor, audit.ActorCLI); err == nil {
		t.Error("Add with ScopeFor and no duration succeeded")
	}
}

func TestConsumeOnceExactlyOnce(t *testing.T) {
	s, c, _ := newStore(t)
	mustAdd(t, s, "once.example.test", ScopeOnce)
	mustAdd(t, s, "always.example.test", ScopeAlways)
	if ok, err := s.Consume("always.example.test"); ok || err != nil {
		t.Fatalf("consumed an always approval: %v %v", ok, err)
	}
	var wg sync.WaitGroup
	var used atomic.Int32
	for range 8 {
		wg.Go(func() {
			ok, err := s.Consume("once.example.test")
			if err != nil {
				t.Error(err)
			}
			if ok {
				used.Add(1)
			}
		})
	}
	wg.Wait()
	if used.Load() != 1 {
		t.Fatalf("once approval used %d times", used.Load())
	}
	if got, _ := s.Active(c.now()); !reflect.DeepEqual(got, []string{"always.example.test"}) {
		t.Fatalf("after use: %q", got)
	}
	// An unused once-approval lapses.
	mustAdd(t, s, "late.example.test", ScopeOnce)
	c.advance(OnceFor)
	if ok, _ := s.Consume("late.example.test"); ok {
		t.Fatal("consumed a lapsed once approval")
	}
}
