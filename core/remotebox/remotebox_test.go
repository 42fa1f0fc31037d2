package remotebox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/config/granttest"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/version"
)

// fake is a remote host behind testdata/fake-ssh.sh.
type fake struct {
	t    *testing.T
	root string // FAKE_SSH_DIR
	h    remote.Host
	c    Client
}

func newFake(t *testing.T, name string) *fake {
	t.Helper()
	root := t.TempDir()
	h, err := remote.NewHost(name, "ssh://me@"+name+".test", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, h.Target.Destination()), 0o755); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("testdata/fake-ssh.sh")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_SSH_DIR", root)
	t.Setenv("FAKE_SSH_VERSION", version.Version)
	t.Setenv("FAKE_SSH_COMMIT", version.Commit)
	now := time.Date(2026, 5, 6, 12, 0, 0, 0, time.UTC)
	return &fake{t: t, root: root, h: h,
		c: Client{Runner: remote.Runner{SSH: script, Batch: true}, Timeout: 5 * time.Second, Now: func() time.Time { return now }}}
}

// file writes the host's answer file name. A well-formed list of boxes
// (ls.json) or egress answer is given the document around it that corral
// prints (its schema).
func (f *fake) file(name, content string) {
	f.t.Helper()
	content = document(name, content)
	if err := os.WriteFile(filepath.Join(f.root, f.h.Target.Destination(), name), []byte(content), 0o600); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fake) lines(name string) []string {
	b, _ := os.ReadFile(filepath.Join(f.root, name))
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (f *fake) calls() []string { return f.lines("calls") }

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var t0 = time.Date(2026, 5, 6, 11, 0, 0, 0, time.UTC)

// listing is what a host's corral ls --json prints for three boxes, in
// the shape of box.Status (cmd/corral/cli TestLsJSONReadByTheMenu holds
// the reader to the real type; core/box is not imported here, whose
// darwin build needs cgo).
const listing = `[
 {"name":"web-1","project":"/home/me/src/web","created":"0001-01-01T00:00:00Z","template_hash":"","broker_port":0,"network":"broker",
  "memory_cap":4294967296,"cpus":2,"vm_type":"","idle_stop":"30m","ports":[{"host":3000,"guest":3000}],"host_ports":[9229],"hide":[".env"],
  "last_activity":"0001-01-01T00:00:00Z","state":"Running","mem_bytes":1073741824,"peak_bytes":2147483648,"idle_ns":0,"idle_due":false,
  "live_sessions":2,"sessions":[{"id":"s1","pid":42,"agent":"claude","started":"2026-05-06T11:00:00Z"}],"broker_running":true,
  "learning_until":"2026-05-06T12:00:00Z"},
 {"name":"api-2","project":"/home/me/src/api","created":"0001-01-01T00:00:00Z","template_hash":"","broker_port":0,"network":"full",
  "memory_cap":2147483648,"cpus":0,"vm_type":"","idle_stop":"","saved":{"tag":"","at":"0001-01-01T00:00:00Z"},
  "last_activity":"0001-01-01T00:00:00Z","state":"Stopped","mem_bytes":0,"idle_ns":10800000000000,"idle_due":false,"live_sessions":0,
  "broker_running":false},
 {"name":"bad-3","project":"/home/me/src/bad","created":"0001-01-01T00:00:00Z","template_hash":"","broker_port":0,"network":"broker",
  "memory_cap":0,"cpus":0,"vm_type":"","idle_stop":"","last_activity":"0001-01-01T00:00:00Z","provision_error":"apt failed",
  "state":"Running","mem_bytes":0,"idle_ns":0,"idle_due":false,"live_sessions":0,"broker_running":false}
]`

const egressWeb = `{"box":"web-1","since":"2026-05-05T12:00:00Z","allow_list":[],"refused":[],"destinations":[
 {"host":"evil.example.test","port":443,"allowed":false,"count":3,"last_seen":"2026-05-06T11:58:00Z","reason":"host-not-allowed"},
 {"host":"\u001b[31mred","port":0,"allowed":false,"count":1,"last_seen":"2026-05-06T11:57:00Z","reason":"malformed-authority"},
 {"host":"api.anthropic.com","port":443,"allowed":true,"count":9,"last_seen":"2026-05-06T11:59:00Z","reason":"allowed"}],
 "recent_denials":[],"pending_requests":[],"credentials":[],"credential_refused":0,"box_requests":[]}`

func TestReadCanned(t *testing.T) {
	f := newFake(t, "gpu")
	f.file("ls.json", listing)
	f.file("egress-web-1.json", egressWeb)
	f.file("egress-bad-3.json", `{"box":"bad-3","destinations":[]}`)
	res := f.c.Read(context.Background(), f.h)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	want := []Box{
		{Name: "api-2", Project: "/home/me/src/api", State: boxstate.Saved, MemCapBytes: 2 << 30, Idle: 3 * time.Hour},
		{Name: "bad-3", Project: "/home/me/src/bad", State: boxstate.Failed, Broker: true},
		{Name: "web-1", Project: "/home/me/src/web", State: boxstate.Running, MemBytes: 1 << 30, PeakBytes: 2 << 30, MemCapBytes: 4 << 30,
			Sessions: 2, Broker: true, LearningUntil: t0.Add(time.Hour), Denied: []Denial{
				{Host: "evil.example.test", Port: 443, Count: 3, Last: time.Date(2026, 5, 6, 11, 58, 0, 0, time.UTC)},
				{Host: "\x1b[31mred", Count: 1, Last: time.Date(2026, 5, 6, 11, 57, 0, 0, time.UTC), Malformed: true},
			}},
	}
	if res.Host != "gpu" || res.URL != "ssh://me@gpu.test" || !res.At.Equal(f.c.Now()) || !equalBoxes(res.Boxes, want) {
		t.Errorf("read %+v\nwant %+v", res, want)
	}
	// One version check, one ls, one egress per broker box (running first,
	// then by name; both are up, the failed one too);
	// every ssh asks nothing (BatchMode).
	wantCalls := []string{
		`'corral' --host local 'version' '--json'`,
		`'corral' --host local 'ls' '--json'`,
		`'corral' --host local 'egress' '--json' '--since' '24h' '--' 'bad-3'`,
		`'corral' --host local 'egress' '--json' '--since' '24h' '--' 'web-1'`,
	}
	if got := f.calls(); !slices.Equal(got, wantCalls) {
		t.Errorf("calls\n%q\nwant\n%q", got, wantCalls)
	}
	if n := strings.Count(strings.Join(f.lines("opts"), "\n"), "-o BatchMode=yes"); n != 4 {
		t.Errorf("BatchMode in %d of 4 ssh runs: %q", n, f.lines("opts"))
	}
}

func equalBoxes(a, b []Box) bool {
	return slices.EqualFunc(a, b, func(x, y Box) bool {
		return x.Name == y.Name && x.Project == y.Project && x.State == y.State && x.MemBytes == y.MemBytes &&
			x.PeakBytes == y.PeakBytes && x.MemCapBytes == y.MemCapBytes && x.Idle == y.Idle && x.Sessions == y.Sessions &&
			x.Broker == y.Broker && x.LearningUntil.Equal(y.LearningUntil) && x.DeniedErr == y.DeniedErr &&
			slices.EqualFunc(x.Denied, y.Denied, func(p, q Denial) bool {
				return p.Host == q.Host && p.Port == q.Port && p.Count == q.Count && p.Last.Equal(q.Last) && p.Malformed == q.Malformed
			})
	})
}

// A box whose denials cannot be read is still listed, saying why; the
// host's words in the reason are made safe.
func TestReadDenialsUnknown(t *testing.T) {
	f := newFake(t, "gpu")
	f.file("ls.json", `[{"name":"web-1","project":"/p","state":"Running","network":"broker"},
		{"name":"db-2","project":"/q","state":"Running","network":"learn"},
		{"name":"x-3","project":"/r","state":"Stopped","network":"broker"}]`)
	f.file("egress-web-1.json", `{"box":"other","destinations":[]}`)
	f.file("egress-db-2.json", `{"box":"db-2","destinations":[{"host":"a","port":"443"}]}`)
	res := f.c.Read(context.Background(), f.h)
	if res.Err != nil || len(res.Boxes) != 3 {
		t.Fatalf("%+v", res)
	}
	for _, b := range res.Boxes {
		var want string
		switch b.Name {
		case "web-1":
			want = `the answer is about box "other", not web-1`
		case "db-2":
			want = "port: json: cannot unmarshal string"
		case "x-3":
			want = `corral egress exited 1: "no box x-3"`
		}
		if !strings.Contains(b.DeniedErr, want) || len(b.Denied) != 0 {
			t.Errorf("%s: denials %q, want %q", b.Name, b.DeniedErr, want)
		}
	}
}

// Hostile answers refuse the whole host, with a reason safe to show.
func TestReadHostileList(t *testing.T) {
	box := func(fields string) string {
		return `[{"name":"web-1","project":"/p","state":"Running","network":"full"` + fields + `}]`
	}
	for name, tc := range map[string]struct{ ls, want string }{
		"not json":         {"hello\x1b[2J", "invalid character"},
		"an object":        {`{"name":"web-1"}`, `schema "", want corral.boxes/v1`},
		"a bare list":      {`{"schema":"corral.boxes/v1","boxes":{}}`, `boxes: want "[", got "{"`},
		"another schema":   {`{"schema":"corral.boxes/v2","boxes":[]}`, `schema "corral.boxes/v2", want corral.boxes/v1`},
		"trailing data":    {document("ls.json", box("")) + `[]`, "data after the document"},
		"duplicate key":    {box(`,"state":"Stopped"`), `key "state" given twice`},
		"key case":         {`[{"Name":"web-1","state":"Running"}]`, `name "": not a box name`},
		"bad name":         {`[{"name":"../x","state":"Running"}]`, `name "../x": not a box name`},
		"escape in name":   {`[{"name":"a\u001b[2J","state":"Running"}]`, `name "a\\x1b[2J": not a box name`},
		"state":            {`[{"name":"web-1","state":"Exploded"}]`, `state "Exploded": not a box state`},
		"negative memory":  {box(`,"mem_bytes":-1`), "mem_bytes: json: cannot unmarshal number -1"},
		"fraction":         {box(`,"live_sessions":1.5`), "live_sessions: json: cannot unmarshal number 1.5"},
		"string for int":   {box(`,"idle_ns":"5"`), "idle_ns: json: cannot unmarshal string"},
		"negative idle":    {box(`,"idle_ns":-5`), "idle_ns: negative"},
		"too many keys":    {box(manyKeys(200)), "more than 128 keys"},
		"duplicate box":    {`[{"name":"a","state":"Running"},{"name":"a","state":"Running"}]`, "box a listed twice"},
		"too many boxes":   {manyBoxes(MaxBoxes + 1), "boxes: more than 256"},
		"saved not object": {box(`,"saved":true`), `saved: want "{", got "true"`},
		"huge":             {box(`,"pad":"` + strings.Repeat("x", MaxListBytes) + `"`), "printed more than the cap"},
		"long string":      {box(`,"provision_error":"` + strings.Repeat("x", 70<<10) + `"`), "provision_error: longer than"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFake(t, "gpu")
			f.file("ls.json", tc.ls)
			res := f.c.Read(context.Background(), f.h)
			if res.Err == nil || res.Boxes != nil {
				t.Fatalf("accepted: %+v", res.Boxes)
			}
			r := Reason(res.Err)
			if !strings.Contains(r, tc.want) {
				t.Errorf("reason %q, want %q", r, tc.want)
			}
			if strings.ContainsFunc(r, display.Unsafe) || len([]rune(r)) > maxReason {
				t.Errorf("unsafe or long reason %q", r)
			}
		})
	}
}

func manyBoxes(n int) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"name":"b-%d","state":"Running"}`, i)
	}
	return b.String() + "]"
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(`,"k` + strings.Repeat("x", i) + `":1`)
	}
	return b.String()
}

// Project paths a host sends that could not be passed back as -C (or
// shown honestly) are dropped, not the box.
func TestReadDropsUnusableProject(t *testing.T) {
	for _, p := range []string{"", "relative/p", "/a/../b", "/a//b", "/a\nb", "/a\x1b[2Jb", "/a\u202eb", "/" + strings.Repeat("a", maxPath)} {
		f := newFake(t, "gpu")
		f.file("ls.json", mustJSON(t, []map[string]any{{"name": "web-1", "state": "Stopped", "project": p}}))
		res := f.c.Read(context.Background(), f.h)
		if res.Err != nil || len(res.Boxes) != 1 || res.Boxes[0].Project != "" {
			t.Errorf("project %q: %+v %v", p, res.Boxes, res.Err)
		}
	}
}

func TestReadUnreachable(t *testing.T) {
	f := newFake(t, "gpu")
	f.file("unreachable", "")
	res := f.c.Read(context.Background(), f.h)
	if !errors.Is(res.Err, remote.ErrUnreachable) {
		t.Fatalf("err %v", res.Err)
	}
	if r := Reason(res.Err); r != "host gpu (ssh://me@gpu.test): cannot reach the host over ssh: ssh: connect to host me@gpu.test port 22: Connection refused" {
		t.Errorf("reason %q", r)
	}
	if w := res.Why(); w != "cannot reach the host over ssh: ssh: connect to host me@gpu.test port 22: Connection refused" {
		t.Errorf("why %q", w)
	}
}

// A host that never answers costs its deadline, no more: ssh is killed and
// the read says so.
func TestReadSlow(t *testing.T) {
	f := newFake(t, "gpu")
	f.file("slow", "")
	f.c.Timeout = 300 * time.Millisecond
	start := time.Now()
	res := f.c.Read(context.Background(), f.h)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("read took %s", took)
	}
	if res.Err == nil || !errors.Is(res.Err, context.DeadlineExceeded) || Reason(res.Err) != "host gpu: no answer within 300ms: context deadline exceeded" || res.Why() != "no answer within 300ms: context deadline exceeded" {
		t.Errorf("err %v", res.Err)
	}
}

func TestReadOtherVersion(t *testing.T) {
	f := newFake(t, "gpu")
	t.Setenv("FAKE_SSH_VERSION", "0.0.1-other")
	res := f.c.Read(context.Background(), f.h)
	var vm *remote.VersionMismatchError
	if !errors.As(res.Err, &vm) || len(f.calls()) != 1 {
		t.Errorf("err %v, calls %q", res.Err, f.calls())
	}
}

func TestActions(t *testing.T) {
	f := newFake(t, "gpu")
	ctx := context.Background()
	for _, tc := range []struct {
		do   func() error
		want string
	}{
		{func() error { return f.c.Start(ctx, f.h, "web-1") }, `'corral' --host local 'start' '--' 'web-1'`},
		{func() error { return f.c.Stop(ctx, f.h, "web-1") }, `'corral' --host local 'stop' '--' 'web-1'`},
		{func() error { return f.c.Allow(ctx, f.h, "web-1", "api.example.test", approval.ScopeAlways, 0) },
			`'corral' --host local 'allow' '--always' '--' 'web-1' 'api.example.test'`},
		{func() error { return f.c.Allow(ctx, f.h, "web-1", "*.example.test", approval.ScopeSession, 0) },
			`'corral' --host local 'allow' '--session' '--' 'web-1' '*.example.test'`},
		{func() error { return f.c.Allow(ctx, f.h, "web-1", "localhost:3000", approval.ScopeOnce, 0) },
			`'corral' --host local 'allow' '--once' '--' 'web-1' 'localhost:3000'`},
		{func() error {
			return f.c.Allow(ctx, f.h, "web-1", "api.example.test", approval.ScopeFor, time.Hour)
		}, `'corral' --host local 'allow' '--for' '1h0m0s' '--' 'web-1' 'api.example.test'`},
	} {
		before := len(f.calls())
		if before == 1 && f.calls()[0] == "" {
			before = 0
		}
		if err := tc.do(); err != nil {
			t.Errorf("%s: %v", tc.want, err)
			continue
		}
		got := f.calls()[before:]
		if !slices.Equal(got, []string{`'corral' --host local 'version' '--json'`, tc.want}) {
			t.Errorf("calls %q, want the check and %q", got, tc.want)
		}
	}

	// Refused here, before anything is sent.
	n := len(f.calls())
	for _, err := range []error{
		f.c.Start(ctx, f.h, "--all"),
		f.c.Stop(ctx, f.h, "a b"),
		f.c.Allow(ctx, f.h, "web-1", "--revoke", approval.ScopeAlways, 0),
		f.c.Allow(ctx, f.h, "web-1", "API.example.test", approval.ScopeAlways, 0),
		f.c.Allow(ctx, f.h, "web-1", "a.test extra", approval.ScopeAlways, 0),
		f.c.Allow(ctx, f.h, "web-1", "a.test", approval.ScopeFor, time.Second),
		f.c.Allow(ctx, f.h, "web-1", "a.test", "forever", 0),
		f.c.Allow(ctx, f.h, "web-1", "*.com", approval.ScopeAlways, 0),
		f.c.Allow(ctx, f.h, "web-1", "169.254.169.254", approval.ScopeAlways, 0),
		f.c.Allow(ctx, f.h, "web-1", "10.1.2.0/24", approval.ScopeAlways, 0),
	} {
		if err == nil {
			t.Error("accepted")
		}
	}
	if len(f.calls()) != n {
		t.Errorf("sent after a refusal: %q", f.calls()[n:])
	}

	// The host's refusal comes back as its own reason line.
	f.file("fail", "corral: allowing a.test: refused by the grant check\nhint: see corral allow --help\n")
	err := f.c.Allow(ctx, f.h, "web-1", "a.test", approval.ScopeAlways, 0)
	if err == nil || err.Error() != `host gpu: corral allow exited 1: "allowing a.test: refused by the grant check"` {
		t.Errorf("failure: %v", err)
	}
}

func TestActionSlow(t *testing.T) {
	f := newFake(t, "gpu")
	f.file("slow", "")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := f.c.Stop(ctx, f.h, "web-1"); err == nil {
		t.Error("no error")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %s", took)
	}
}

// The decoders are held to the egress package's reasons: the two that
// mean "did not parse" are the ones marked Malformed.
func TestMalformedReasons(t *testing.T) {
	for _, r := range []egress.Reason{egress.ReasonMalformedAuthority, egress.ReasonUserinfo, egress.ReasonHostNotAllowed} {
		ds, err := DecodeEgress([]byte(`{"schema":"corral.egress/v1","box":"b","destinations":[{"host":"h","port":1,"allowed":false,"count":1,"reason":"`+string(r)+`"}]}`), "b")
		if err != nil || len(ds) != 1 || ds[0].Malformed != (r != egress.ReasonHostNotAllowed) {
			t.Errorf("%s: %+v %v", r, ds, err)
		}
	}
}

// Allow agrees with the one grant check for every corpus entry, as the
// local paths do (app TestAllowAgreesWithTheGrantCheck): a canonical entry
// is sent exactly when the check does not refuse it and it is no range.
// The check runs here; nothing refused reaches the host.
func TestAllowAgreesWithTheGrantCheck(t *testing.T) {
	f := newFake(t, "gpu")
	for _, c := range granttest.Egress {
		e, err := egress.ParseAllowEntry(c.Entry)
		if err != nil || e.String() != c.Entry {
			continue // not canonical: refused before the check (TestActions)
		}
		v := config.CheckGrant("egress", c.Entry, config.GrantContext{})
		refused := v.Risk == config.RiskRefused || e.IsRange()
		n := len(f.calls())
		err = f.c.Allow(context.Background(), f.h, "web-1", c.Entry, approval.ScopeAlways, 0)
		sent := len(f.calls()) > n
		if (err != nil) != refused || sent == refused {
			t.Errorf("%q: err %v, sent %v; want refused=%v (%s)", c.Entry, err, sent, refused, v.Why)
		}
	}
}

// document wraps a fixture the way corral prints it: a valid list of boxes
// in its SchemaBoxes object, an egress object with SchemaEgress first.
func document(name, content string) string {
	switch {
	case !json.Valid([]byte(content)):
		return content
	case name == "ls.json" && strings.HasPrefix(content, "["):
		return `{"schema":"` + SchemaBoxes + `","boxes":` + content + `}`
	case strings.HasPrefix(name, "egress-") && strings.HasPrefix(content, `{"box"`):
		return `{"schema":"` + SchemaEgress + `",` + content[1:]
	}
	return content
}
