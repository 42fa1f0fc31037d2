package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// startRelay serves b's relay handler on a Unix socket in a short private
// directory (sun_path is 104 bytes on macOS) and returns the socket.
func startRelay(t *testing.T, b *CredentialBroker, maxBody int64) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "r.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b.RelayHandler(RelayOptions{MaxBody: maxBody}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func unixClient(sock string) *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

// rawUnix sends one raw request over the socket and returns the status.
func rawUnix(t *testing.T, sock, req string) (int, string) {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	var code int
	fmt.Sscanf(string(b), "HTTP/1.1 %d", &code)
	return code, string(b)
}

func newRelayBroker(t *testing.T, up *upstreamRecorder) (*CredentialBroker, *memCredLog, string) {
	t.Helper()
	cl := &memCredLog{}
	b, err := NewCredentialBroker(CredentialConfig{Resolver: testResolver{}, Log: cl, Credentials: []Credential{
		{Name: "api", Upstream: up.srv.URL + "/base", Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool(),
			Rules: &CredentialRules{Methods: []string{"GET", "POST"}, Paths: []string{"/v1"}}},
		{Name: "git", Upstream: up.srv.URL, Header: HeaderBasic, Secret: staticSecret(realKey), RootCAs: up.pool(),
			Rules: &CredentialRules{ReadOnly: true, Git: true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := b.NewToken("relay-1")
	if err != nil {
		t.Fatal(err)
	}
	return b, cl, tok
}

// TestRelayChecksAndInjects is the laptop's side of the relay over a real
// Unix socket to a TLS upstream on 127.0.0.1: the key is injected only
// for a request with the relay's token that the credential's rules
// allow; everything else is refused before the upstream is reached.
func TestRelayChecksAndInjects(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse)
	})
	b, cl, tok := newRelayBroker(t, up)
	sock := startRelay(t, b, 1024)
	base := "http://" + RelayHost + CredentialPrefix

	req, _ := http.NewRequest("POST", base+tok+"/api/v1/messages?beta=true", strings.NewReader(`{"stream":true}`))
	req.Header.Set("X-Api-Key", "placeholder")
	req.Header.Set("Authorization", "Bearer box")
	resp, err := unixClient(sock).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != sse {
		t.Fatalf("allowed request: %d %q", resp.StatusCode, got)
	}
	r := up.last(t)
	if r.URL.Path != "/base/v1/messages" || r.URL.RawQuery != "beta=true" || r.Header.Get("Authorization") != "" {
		t.Errorf("upstream got %s %v", r.URL, r.Header)
	}
	if k := r.Header.Values("X-Api-Key"); len(k) != 1 || k[0] != realKey {
		t.Errorf("upstream x-api-key = %q, want only the real key", k)
	}
	if body, _ := io.ReadAll(r.Body); string(body) != `{"stream":true}` {
		t.Errorf("upstream body %q", body)
	}
	if strings.Contains(string(got), realKey) || strings.Contains(fmt.Sprint(resp.Header), realKey) {
		t.Error("the answer holds the key")
	}

	seen := len(up.all())
	cl.all(1) // the allowed request is logged after its answer: count from after it
	other := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, req string
		status    int
		refusal   CredentialRefusal
	}{
		{"wrong token", "GET " + CredentialPrefix + other + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 403, RefusedToken},
		{"no token", "GET " + CredentialPrefix + "api/v1/x HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 403, RefusedToken},
		{"path outside the rules", "GET " + CredentialPrefix + tok + "/api/v2/x HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 403, RefusedRule},
		{"path climbing", "GET " + CredentialPrefix + tok + "/api/v1/../../etc HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 400, RefusedPath},
		{"method outside the rules", "DELETE " + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 403, RefusedRule},
		{"method override", "POST " + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\nX-Http-Method-Override: DELETE\r\nContent-Length: 0\r\n\r\n", 403, RefusedRule},
		{"read_only push", "POST " + CredentialPrefix + tok + "/git/o/r.git/git-receive-pack HTTP/1.1\r\nHost: corral-relay\r\nContent-Length: 1\r\n\r\nx", 403, RefusedRule},
		{"read_only push discovery", "GET " + CredentialPrefix + tok + "/git/o/r.git/info/refs?service=git-receive-pack HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 403, RefusedRule},
		{"unknown credential", "GET " + CredentialPrefix + tok + "/nope/v1 HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 404, RefusedUnknown},
		{"oversize declared", "POST " + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\nContent-Length: 1025\r\n\r\n", 413, RefusedSize},
		{"another host", "GET " + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: example.com\r\n\r\n", 400, RefusedFrame},
		{"absolute URI", "GET https://example.com" + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 400, RefusedFrame},
		{"not a route", "GET /etc/passwd HTTP/1.1\r\nHost: corral-relay\r\n\r\n", 404, RefusedFrame},
		{"upgrade", "GET " + CredentialPrefix + tok + "/api/v1/x HTTP/1.1\r\nHost: corral-relay\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 400, RefusedFrame},
	} {
		n := len(cl.all(0))
		status, text := rawUnix(t, sock, c.req)
		if status != c.status {
			t.Errorf("%s: status %d, want %d: %q", c.name, status, c.status, text)
		}
		ev := cl.all(n + 1)
		if len(ev) != n+1 || ev[n].Refusal != c.refusal {
			t.Errorf("%s: logged %+v, want refusal %q", c.name, ev[n:], c.refusal)
		}
		if strings.Contains(text, realKey) || strings.Contains(text, tok) {
			t.Errorf("%s: the answer holds the key or the token: %q", c.name, text)
		}
	}
	if n := len(up.all()); n != seen {
		t.Errorf("refused requests reached the upstream: %d more", n-seen)
	}

	// A fetch passes read_only, with the git host's Basic header: git's
	// content type and a pkt-line body (issue 35: a fetch is known by its
	// protocol, not by its path's suffix).
	status, text := rawUnix(t, sock, "POST "+CredentialPrefix+tok+"/git/o/r.git/git-upload-pack HTTP/1.1\r\nHost: corral-relay\r\nContent-Type: "+UploadPackType+"\r\nContent-Length: 4\r\nConnection: close\r\n\r\n0000")
	if status != 200 {
		t.Errorf("fetch: %d %q", status, text)
	}
	if r := up.last(t); !strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") || r.URL.Path != "/o/r.git/git-upload-pack" {
		t.Errorf("fetch reached upstream as %s %v", r.URL, r.Header)
	}
}

// TestRelayCutsUndeclaredOversize: a chunked body past the cap is cut off
// and refused, and the upstream never gets a complete request.
func TestRelayCutsUndeclaredOversize(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	b, cl, tok := newRelayBroker(t, up)
	sock := startRelay(t, b, 1024)
	body := io.MultiReader(strings.NewReader(strings.Repeat("x", 4096)))
	req, _ := http.NewRequest("POST", "http://"+RelayHost+CredentialPrefix+tok+"/api/v1/x", body)
	req.ContentLength = -1 // chunked
	resp, err := unixClient(sock).Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %d, want 413", resp.StatusCode)
		}
	}
	for _, r := range up.all() {
		if b, _ := io.ReadAll(r.Body); len(b) > 1024 {
			t.Errorf("upstream got %d bytes", len(b))
		}
	}
	ev := cl.all(1)
	if len(ev) != 1 || ev[0].Refusal != RefusedSize {
		t.Errorf("logged %+v", ev)
	}
}

// TestRelayedCredentialEndToEnd is the whole path with both halves: a box
// request to the remote broker's route (the box's token), the remote
// broker holding no key and forwarding over the socket with the relay's
// token, the laptop's relay injecting the key.
func TestRelayedCredentialEndToEnd(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse)
	})
	laptop, laptopLog, relayTok := newRelayBroker(t, up)
	sock := startRelay(t, laptop, 0)

	// The remote side knows the upstream and the rules, not the key.
	p, remoteLog := startCredProxy(t, []Credential{{Name: "api", Upstream: up.srv.URL + "/base",
		Rules: &CredentialRules{Paths: []string{"/v1"}}, Relayed: true}})
	// p.tok is a session without a relay; this one came from the laptop.
	noRelay := p.tok
	var err error
	if p.tok, err = p.srv.cfg.Credentials.NewRelayToken("s2", Relay{Socket: sock, Token: relayTok}); err != nil {
		t.Fatal(err)
	}
	resp, got := rawRequest(t, p.addr, "POST /corral/credential/"+p.tok+"/api/v1/messages HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n"+
		"X-Api-Key: placeholder\r\nContent-Length: 2\r\n\r\n{}")
	if resp.StatusCode != 200 || got != sse {
		t.Fatalf("status %d body %q", resp.StatusCode, got)
	}
	if r := up.last(t); r.Header.Get("X-Api-Key") != realKey || r.URL.Path != "/base/v1/messages" {
		t.Errorf("upstream got %s %v", r.URL, r.Header)
	}
	// The remote broker refuses by its own copy of the rules first; the
	// laptop would refuse it too.
	n := len(up.all())
	resp, _ = rawRequest(t, p.addr, "GET /corral/credential/"+p.tok+"/api/v2/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n")
	if resp.StatusCode != 403 || len(up.all()) != n {
		t.Errorf("outside the rules: %d, upstream saw %d more", resp.StatusCode, len(up.all())-n)
	}
	// A session that brought no relay is refused: the remote broker has
	// no key to fall back on.
	n = len(up.all())
	resp, got = rawRequest(t, p.addr, "GET /corral/credential/"+noRelay+"/api/v1/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n")
	if resp.StatusCode != 502 || !strings.Contains(got, "no relay") || len(up.all()) != n {
		t.Errorf("session without a relay: %d %q", resp.StatusCode, got)
	}
	if ev := remoteLog.all(3); len(ev) != 3 || ev[0].Status != 200 || ev[0].Session != "s2" || ev[1].Refusal != RefusedRule || ev[2].Status != 502 {
		t.Errorf("remote log %+v", ev)
	}
	if ev := laptopLog.all(1); len(ev) != 1 || ev[0].Session != "relay-1" || ev[0].Status != 200 {
		t.Errorf("laptop log %+v", ev)
	}
}

func TestRelayedCredentialValidation(t *testing.T) {
	tok := strings.Repeat("a", 64)
	for _, c := range []Credential{
		{Name: "a", Upstream: "https://x.test", Secret: staticSecret("k"), Relayed: true},
		{Name: "a", Upstream: "https://x.test", Header: HeaderAPIKey, Relayed: true},
	} {
		if _, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{c}}); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	b, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{{Name: "a", Upstream: "https://x.test", Relayed: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []Relay{
		{Socket: "rel/sock", Token: tok},
		{Socket: "/a/../b", Token: tok},
		{Socket: "/" + strings.Repeat("s", 200), Token: tok},
		{Socket: "/s", Token: strings.ToUpper(tok)},
		{Socket: "/s", Token: "short"},
	} {
		if _, err := b.NewRelayToken("s", r); err == nil {
			t.Errorf("accepted %+v", r)
		}
	}
	if _, err := b.NewRelayToken("s", Relay{Socket: "/run/corral/relay-1.sock", Token: tok}); err != nil {
		t.Error(err)
	}
}
