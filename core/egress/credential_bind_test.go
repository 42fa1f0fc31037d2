package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A route answers only the token its own broker issued, with the broker's
// own Host; every refusal is logged without the request's text.
func TestCredentialRouteBinding(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	creds := []Credential{{Name: "a", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()}}
	p, cl := startCredProxy(t, creds)
	// A second box's broker, with its own token.
	other, err := NewCredentialBroker(CredentialConfig{Credentials: creds, Resolver: testResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	otherTok, err := other.NewToken("s9")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.tok) != TokenLen || p.tok == otherTok {
		t.Fatalf("tokens %q %q", p.tok, otherTok)
	}
	const self = "192.168.5.4:4242"
	for _, tc := range []struct {
		name, target, host string
		status             int
		refusal            CredentialRefusal
	}{
		{"right token", "/corral/credential/" + p.tok + "/a/v1/x", self, 200, ""},
		{"absolute form", "http://" + self + "/corral/credential/" + p.tok + "/a/v1/x", self, 200, ""},
		{"no token", "/corral/credential/a/v1/x", self, 403, RefusedToken},
		{"wrong token", "/corral/credential/" + strings.Repeat("0", TokenLen) + "/a/v1/x", self, 403, RefusedToken},
		{"short token", "/corral/credential/" + p.tok[:TokenLen-1] + "/a/v1/x", self, 403, RefusedToken},
		{"upper-cased token", "/corral/credential/" + strings.ToUpper(p.tok) + "/a/v1/x", self, 403, RefusedToken},
		{"another box's token", "/corral/credential/" + otherTok + "/a/v1/x", self, 403, RefusedToken},
		{"foreign host", "/corral/credential/" + p.tok + "/a/v1/x", "attacker.example:4242", 403, RefusedHost},
		{"loopback host not served", "/corral/credential/" + p.tok + "/a/v1/x", "127.0.0.1:1", 403, RefusedHost},
		{"unknown credential", "/corral/credential/" + p.tok + "/nope/x", self, 404, RefusedUnknown},
		{"dirty path", "/corral/credential/" + p.tok + "/a/../x", self, 400, RefusedPath},
	} {
		before := len(cl.all(0))
		resp, body := rawRequest(t, p.addr, "GET "+tc.target+" HTTP/1.1\r\nHost: "+tc.host+"\r\n\r\n")
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d (%q), want %d", tc.name, resp.StatusCode, body, tc.status)
		}
		ev := cl.all(before + 1)
		if len(ev) != before+1 {
			t.Fatalf("%s: %d events, want %d", tc.name, len(ev), before+1)
		}
		e := ev[len(ev)-1]
		if e.Refusal != tc.refusal {
			t.Errorf("%s: refusal %q, want %q", tc.name, e.Refusal, tc.refusal)
		}
		if tc.refusal == RefusedToken || tc.refusal == RefusedHost {
			if e.Name != "" || e.Session != "" {
				t.Errorf("%s: a refused request logged name %q session %q", tc.name, e.Name, e.Session)
			}
		}
		if tc.refusal == "" && (e.Session != "s1" || e.Name != "a" || e.Class != "/v1/x") {
			t.Errorf("%s: event %+v", tc.name, e)
		}
		for _, secret := range []string{p.tok, otherTok, realKey} {
			if strings.Contains(body, secret) || strings.Contains(e.Err, secret) {
				t.Errorf("%s: a secret reached the answer or the log", tc.name)
			}
		}
	}
	if n := len(up.all()); n != 2 {
		t.Errorf("upstream got %d requests, want 2", n)
	}
}

// With BoundOnly, the routes answer only connections served by
// ServeBound (the host funnel's), never loopback TCP, token or not.
func TestCredentialBoundOnly(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	cl := &memCredLog{}
	b, err := NewCredentialBroker(CredentialConfig{BoundOnly: true, Resolver: testResolver{}, Log: cl,
		Credentials: []Credential{{Name: "a", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()}}})
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := b.NewToken("s1")
	p := startProxy(t, nil, nil, func(c *Config) { c.Credentials = b; c.SelfAddrs = []string{"192.168.5.4:4242"} })
	req := "GET /corral/credential/" + tok + "/a/v1/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n"
	if resp, _ := rawRequest(t, p.addr, req); resp.StatusCode != 403 {
		t.Errorf("loopback TCP: status %d, want 403", resp.StatusCode)
	}
	if ev := cl.all(1); len(ev) != 1 || ev[0].Refusal != RefusedUnbound {
		t.Errorf("log %+v", ev)
	}
	// The same request over a bound listener is served.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = p.srv.ServeBound(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
		}
	})
	if resp, body := rawRequest(t, ln.Addr().String(), req); resp.StatusCode != 200 {
		t.Errorf("bound: status %d %q", resp.StatusCode, body)
	}
}

func TestPathClass(t *testing.T) {
	for _, tc := range []struct{ rest, query, want string }{
		{"/v1/messages", "beta=true", "/v1/messages"},
		{"/v1/messages/count_tokens", "", "/v1/messages/…"},
		{"/responses", "", "/responses"},
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", "alt=sse", "/v1beta/models/…"},
		{"/owner/repo.git/info/refs", "service=git-receive-pack", "info/refs git-receive-pack"},
		{"/owner/repo.git/info/refs", "service=evil", "info/refs"},
		{"/owner/repo.git/git-receive-pack", "", "git-receive-pack"},
		{"/owner/repo.git/git-upload-pack", "", "git-upload-pack"},
		{"/sk-ant-secret123/x", "", "/…"},
		{"/", "", "/"},
		{"/v000/x", "", "/…"},
		{"/v1beta1/models", "", "/v1beta1/models"},
		{"/v1beta/models", "", "/v1beta/models"},
	} {
		if got := PathClass(tc.rest, tc.query); got != tc.want {
			t.Errorf("PathClass(%q, %q) = %q, want %q", tc.rest, tc.query, got, tc.want)
		}
	}
}

// A path class never holds a digit run, an upper-case letter or anything
// from the query but git's two service names: what a box puts in a path
// (an ID, a token) does not reach the audit log.
func FuzzPathClass(f *testing.F) {
	for _, s := range []string{"/v1/messages", "/o/r.git/info/refs", "/AKIA1234/x", "/v1/a b"} {
		f.Add(s, "service=git-upload-pack&token=abc")
	}
	f.Fuzz(func(t *testing.T, rest, query string) {
		c := PathClass(rest, query)
		if len(c) > 64 || strings.ContainsAny(c, "?=&%:.ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Fatalf("PathClass(%q, %q) = %q", rest, query, c)
		}
		for i := 0; i+3 <= len(c); i++ {
			if c[i] >= '0' && c[i] <= '9' && c[i+1] >= '0' && c[i+1] <= '9' && c[i+2] >= '0' && c[i+2] <= '9' {
				t.Fatalf("PathClass(%q, %q) = %q keeps a number", rest, query, c)
			}
		}
	})
}

// TestCredentialThroughSelfConnect: a client that tunnels everything
// through its proxy (Gemini CLI) sends CONNECT to the broker's own address
// and then its request inside: the same checks apply (token, Host), and a
// CONNECT to the broker's address without credential routes is denied as
// before.
func TestCredentialThroughSelfConnect(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	creds := []Credential{{Name: "a", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()}}
	p, _ := startCredProxy(t, creds)
	const self = "192.168.5.4:4242"
	tunnel := func(inner string) (int, int) {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := io.WriteString(c, "CONNECT "+self+" HTTP/1.1\r\nHost: "+self+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			return resp.StatusCode, 0
		}
		if _, err := io.WriteString(c, inner); err != nil {
			t.Fatal(err)
		}
		in, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, in.Body)
		return resp.StatusCode, in.StatusCode
	}
	if outer, inner := tunnel("GET /corral/credential/" + p.tok + "/a/v1/x HTTP/1.1\r\nHost: " + self + "\r\n\r\n"); outer != 200 || inner != 200 {
		t.Errorf("through a self CONNECT: %d then %d, want 200 then 200", outer, inner)
	}
	if _, inner := tunnel("GET /corral/credential/" + strings.Repeat("0", TokenLen) + "/a/v1/x HTTP/1.1\r\nHost: " + self + "\r\n\r\n"); inner != 403 {
		t.Errorf("a wrong token through a self CONNECT: %d, want 403", inner)
	}
	if _, inner := tunnel("GET /corral/credential/" + p.tok + "/a/v1/x HTTP/1.1\r\nHost: attacker.example:4242\r\n\r\n"); inner != 403 {
		t.Errorf("a foreign Host through a self CONNECT: %d, want 403", inner)
	}
	if n := len(up.all()); n != 1 {
		t.Errorf("upstream got %d requests, want 1", n)
	}
	// No credential routes: a CONNECT to that address is an ordinary,
	// denied one.
	plain := startProxy(t, nil, nil, func(c *Config) { c.SelfAddrs = []string{self} })
	resp, _ := rawRequest(t, plain.addr, "CONNECT "+self+" HTTP/1.1\r\nHost: "+self+"\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a self CONNECT without credential routes: %d, want 403", resp.StatusCode)
	}
}
