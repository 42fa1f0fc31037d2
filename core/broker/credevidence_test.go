package broker

import (
	"bufio"
	"context"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/egress"
)

func lookup(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

// credGet sends one origin-form request to the broker as the box would.
func credGet(t *testing.T, addr, target, host string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, "POST "+target+" HTTP/1.1\r\nHost: "+host+"\r\nX-Api-Key: "+credential.Placeholder+"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufioReader(c), nil)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The broker was started from an environment without Claude's key (the
// menu-bar app, launched from Finder); a session whose shell exports it
// supplies it over the control socket, and the session's route answers
// with it. The key crosses no command line and no child's environment:
// both ends run in this process, and the broker's environment is Getenv.
func TestSessionSuppliesKeyTheBrokerLacks(t *testing.T) {
	var mu sync.Mutex
	var gotKey, gotPath string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKey, gotPath = r.Header.Get("X-Api-Key"), r.URL.Path
		mu.Unlock()
	}))
	defer up.Close()
	l, name := newBox(t, "")
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", Getenv: lookup(),
		CredentialUpstreams: map[string]string{credential.Anthropic: up.URL},
		CredentialRootCAs:   map[string]*x509Pool{credential.Anthropic: poolOf(up)}})

	// A session without the key: nothing served, nothing withheld.
	s0, err := credential.Ask(context.Background(), l.BrokerControl(name), "s0", lookup())
	if err != nil {
		t.Fatal(err)
	}
	if len(s0.Routes) != 0 {
		t.Fatalf("served %+v without a key", s0)
	}
	// The terminal's session has it.
	s1, err := credential.Ask(context.Background(), l.BrokerControl(name), "s1", lookup("ANTHROPIC_API_KEY", "sk-from-terminal"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s1.Routes) != 1 || s1.Routes[0].BaseURLVar != "ANTHROPIC_BASE_URL" || s1.Routes[0].Var != "ANTHROPIC_API_KEY" {
		t.Fatalf("served %+v", s1)
	}
	if code := credGet(t, addr, "/corral/credential/"+s1.Token+"/anthropic/v1/messages", "192.168.5.4:42001"); code != 200 {
		t.Fatalf("status %d", code)
	}
	mu.Lock()
	if gotKey != "sk-from-terminal" || gotPath != "/v1/messages" {
		t.Errorf("upstream got key %q path %q", gotKey, gotPath)
	}
	mu.Unlock()
	// The first session's (empty) answer had no token; a later session
	// without the key now gets the route too: the broker holds it.
	s2, err := credential.Ask(context.Background(), l.BrokerControl(name), "s2", lookup())
	if err != nil || len(s2.Routes) != 1 {
		t.Fatalf("served %+v %v", s2, err)
	}
	for _, f := range []string{l.EgressLog(name), l.AuditLog(), l.BrokerLog(name)} {
		if b, _ := os.ReadFile(f); strings.Contains(string(b), "sk-from-terminal") || strings.Contains(string(b), s1.Token) {
			t.Errorf("%s holds the key or the token", filepath.Base(f))
		}
	}
}

// A second box's broker refuses the first box's route token.
func TestAnotherBoxsTokenIsRefused(t *testing.T) {
	l, a := newBox(t, "")
	env := lookup("ANTHROPIC_API_KEY", "k")
	start(t, Options{Layout: l, Platform: linux, Box: a, Listen: "127.0.0.1:0", Getenv: env})
	sa, err := credential.Ask(context.Background(), l.BrokerControl(a), "s1", nil)
	if err != nil || len(sa.Routes) != 1 {
		t.Fatalf("box a: %+v %v", sa, err)
	}
	l2, b := newBox(t, "")
	addrB := start(t, Options{Layout: l2, Platform: linux, Box: b, Listen: "127.0.0.1:0", Getenv: env})
	if code := credGet(t, addrB, "/corral/credential/"+sa.Token+"/anthropic/v1/messages", "192.168.5.4:42001"); code != 403 {
		t.Errorf("box b answered box a's token with %d, want 403", code)
	}
}

// Evidence survives a flood: one real use, then 70,000 bogus requests (no
// token, wrong token, foreign Host); the audit log still shows the use,
// with its session, method and path class, and the refusals as a few
// counted lines. The egress log never sees the refusals.
func TestCredentialEvidenceSurvivesAFlood(t *testing.T) {
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	dir := t.TempDir()
	al, err := audit.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dl, err := egress.OpenLogSize(filepath.Join(dir, "egress.jsonl"), "web", 64<<10, discard())
	if err != nil {
		t.Fatal(err)
	}
	ca := newCredAudit(dl, al.Record, "web", discard())
	ca.start(50 * time.Millisecond) // flushes run during the flood
	b, err := egress.NewCredentialBroker(egress.CredentialConfig{Log: ca, Credentials: []egress.Credential{{
		Name: "git", Upstream: up.URL, Header: egress.HeaderBasic, RootCAs: poolOf(up),
		Secret: func(context.Context) (string, error) { return "ghp_real", nil }}}})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := b.NewToken("sess1")
	srv, err := egress.NewServer(egress.Config{Credentials: b, SelfAddrs: []string{"192.168.5.4:42001"}, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	send := func(req string) {
		c1, c2 := net.Pipe()
		go srv.ServeConn(c2)
		c1.SetDeadline(time.Now().Add(60 * time.Second)) // a hang guard only: under -race beside a VM a send may wait long
		io.WriteString(c1, req)
		resp, err := http.ReadResponse(bufioReader(c1), nil)
		if err == nil {
			resp.Body.Close()
		}
		c1.Close()
	}
	send("POST /corral/credential/" + tok + "/git/o/r.git/git-receive-pack HTTP/1.1\r\nHost: 192.168.5.4:42001\r\nContent-Length: 0\r\n\r\n")
	const flood = 70000
	bogus := []string{
		"GET /corral/credential/git/x HTTP/1.1\r\nHost: 192.168.5.4:42001\r\n\r\n",
		"GET /corral/credential/" + strings.Repeat("f", 64) + "/git/x HTTP/1.1\r\nHost: 192.168.5.4:42001\r\n\r\n",
		"GET /corral/credential/" + tok + "/git/x HTTP/1.1\r\nHost: rebind.example:42001\r\n\r\n",
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < flood; i += 8 {
				send(bogus[i%len(bogus)])
			}
		})
	}
	wg.Wait()
	ca.Close()
	dl.Close()
	al.Close()

	evs, err := audit.Read(filepath.Join(dir, "audit.jsonl"), audit.Filter{Box: "web"})
	if err != nil {
		t.Fatal(err)
	}
	uses, refusedTotal := audit.CredentialUses(evs)
	if len(uses) != 1 || uses[0].Credential != "git" || uses[0].Uses != 1 || uses[0].Sessions != 1 || refusedTotal != flood {
		t.Fatalf("uses %+v refused %d", uses, refusedTotal)
	}
	var use audit.Event
	refused := 0
	for _, e := range evs {
		switch e.Kind {
		case audit.KindCredentialUse:
			use = e
		case audit.KindCredentialRefused:
			refused += int(e.Fields[audit.FieldCount].(float64))
		}
	}
	if use.Fields[audit.FieldSession] != "sess1" || use.Fields[audit.FieldClass] != "git-receive-pack" || use.Fields[audit.FieldMethod] != "POST" {
		t.Errorf("use %+v", use.Fields)
	}
	if refused != flood {
		t.Errorf("refused count %d, want %d", refused, flood)
	}
	// A few lines per flush, not one per request.
	if len(evs) > 3*int(time.Minute/(50*time.Millisecond)) || len(evs) > flood/10 {
		t.Errorf("%d audit lines for %d requests", len(evs), flood+1)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if strings.Contains(string(raw), tok) || strings.Contains(string(raw), "ghp_real") {
		t.Error("the audit log holds the token or the secret")
	}
	if eg, _ := os.ReadFile(filepath.Join(dir, "egress.jsonl")); strings.Count(string(eg), `"kind":"credential"`) != 1 {
		t.Errorf("egress log credential lines: %d, want the one use", strings.Count(string(eg), `"kind":"credential"`))
	}
}

type x509Pool = x509.CertPool

func poolOf(s *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

func bufioReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

// A laptop's relay names its remote host on every audit line it writes,
// uses and refusals alike (issue 35); a box's broker names none.
func TestCredentialAuditNamesTheHost(t *testing.T) {
	for _, host := range []string{"gpu", ""} {
		var got []audit.Event
		ca := newCredAudit(nil, func(e audit.Event) error { got = append(got, e); return nil }, "web", discard())
		ca.host = host
		ca.LogCredential(egress.CredentialEvent{Name: "anthropic", Session: "relay-1", Upstream: "api.example.test", Method: "POST", Class: "/v1/messages", Status: 200})
		ca.LogCredential(egress.CredentialEvent{Name: "github", Session: "relay-1", Refusal: egress.RefusedNotGranted, Status: 403})
		ca.Flush()
		if len(got) != 2 {
			t.Fatalf("host %q: %d events", host, len(got))
		}
		for _, e := range got {
			h, ok := e.Fields[audit.FieldHost]
			if host != "" && h != host || host == "" && ok {
				t.Errorf("host %q: %s event has host %v", host, e.Kind, h)
			}
		}
		if got[1].Fields[audit.FieldReason] != string(egress.RefusedNotGranted) {
			t.Errorf("refusal %+v", got[1].Fields)
		}
	}
}
