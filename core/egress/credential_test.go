package egress

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const realKey = "sk-real-0123456789abcdef"

// upstreamRecorder is a TLS upstream that records what it received.
type upstreamRecorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []*http.Request
}

func newCredUpstream(t *testing.T, h http.HandlerFunc) *upstreamRecorder {
	u := &upstreamRecorder{}
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r2 := r.Clone(context.Background())
		r2.Body = io.NopCloser(strings.NewReader(string(body)))
		u.mu.Lock()
		u.got = append(u.got, r2)
		u.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstreamRecorder) last(t *testing.T) *http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.got) == 0 {
		t.Fatal("upstream saw no request")
	}
	return u.got[len(u.got)-1]
}

func (u *upstreamRecorder) all() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.got...)
}

func (u *upstreamRecorder) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(u.srv.Certificate())
	return p
}

type memCredLog struct {
	mu sync.Mutex
	ev []CredentialEvent
}

func (m *memCredLog) LogCredential(e CredentialEvent) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ev = append(m.ev, e)
}

// all returns the events once there are at least n (the broker logs a
// request after the client may already have its answer), or after a
// second.
func (m *memCredLog) all(n int) []CredentialEvent {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		m.mu.Lock()
		ev := append([]CredentialEvent(nil), m.ev...)
		m.mu.Unlock()
		if len(ev) >= n || time.Now().After(deadline) {
			return ev
		}
	}
}

func staticSecret(v string) SecretFunc {
	return func(context.Context) (string, error) { return v, nil }
}

func startCredProxy(t *testing.T, creds []Credential) (*testProxy, *memCredLog) {
	t.Helper()
	cl := &memCredLog{}
	b, err := NewCredentialBroker(CredentialConfig{Credentials: creds, Resolver: testResolver{}, Log: cl})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, nil, nil, func(c *Config) {
		c.Credentials = b
		c.SelfAddrs = []string{"192.168.5.4:4242"}
	})
	if p.tok, err = b.NewToken("s1"); err != nil {
		t.Fatal(err)
	}
	return p, cl
}

// rawRequest sends one request over a fresh connection and reads the
// response.
func rawRequest(t *testing.T, addr, req string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

const sse = "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {}\n\n"

func TestCredentialReplacesWhatTheBoxSent(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sse)
	})
	p, cl := startCredProxy(t, []Credential{{Name: "anthropic", Upstream: up.srv.URL, Header: HeaderAPIKey,
		Secret: staticSecret(realKey), RootCAs: up.pool()}})

	for _, form := range []string{"/corral/credential/" + p.tok + "/anthropic/v1/messages?beta=true", "http://192.168.5.4:4242/corral/credential/" + p.tok + "/anthropic/v1/messages?beta=true"} {
		body := `{"stream":true}`
		resp, got := rawRequest(t, p.addr, "POST "+form+" HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n"+
			"X-Api-Key: placeholder\r\nAuthorization: Bearer box-token\r\nCookie: a=b\r\nProxy-Authorization: Basic eA==\r\n"+
			"Anthropic-Version: 2023-06-01\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\n\r\n"+body)
		if resp.StatusCode != 200 || got != sse {
			t.Fatalf("%s: status %d body %q", form, resp.StatusCode, got)
		}
		r := up.last(t)
		if r.URL.Path != "/v1/messages" || r.URL.RawQuery != "beta=true" {
			t.Errorf("upstream path %q query %q", r.URL.Path, r.URL.RawQuery)
		}
		if k := r.Header.Values("X-Api-Key"); len(k) != 1 || k[0] != realKey {
			t.Errorf("upstream x-api-key = %q, want only the real key", k)
		}
		for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
			if v := r.Header.Get(h); v != "" {
				t.Errorf("upstream got %s: %q from the box", h, v)
			}
		}
		if r.Header.Get("Anthropic-Version") != "2023-06-01" {
			t.Errorf("other headers lost: %v", r.Header)
		}
		b, _ := io.ReadAll(r.Body)
		if string(b) != body {
			t.Errorf("upstream body %q", b)
		}
	}
	ev := cl.all(2)
	if len(ev) != 2 || ev[0].Name != "anthropic" || ev[0].Status != 200 || ev[0].Bytes != int64(len(sse)) ||
		ev[0].Upstream != strings.TrimPrefix(up.srv.URL, "https://") {
		t.Errorf("log = %+v", ev)
	}
	for _, e := range ev {
		if strings.Contains(fmt.Sprintf("%+v", e), realKey) {
			t.Errorf("the log event holds the key: %+v", e)
		}
	}
}

func TestCredentialHeaders(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p, _ := startCredProxy(t, []Credential{
		{Name: "oauth", Upstream: up.srv.URL, Header: HeaderAuthorization, Secret: staticSecret("tok"), RootCAs: up.pool()},
		{Name: "git", Upstream: up.srv.URL + "/base/", Header: HeaderBasic, Secret: staticSecret("ghp_x"), RootCAs: up.pool()},
	})
	rawRequest(t, p.addr, "GET /corral/credential/"+p.tok+"/oauth/v1/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nX-Api-Key: k\r\n\r\n")
	r := up.last(t)
	if r.Header.Get("Authorization") != "Bearer tok" || r.Header.Get("X-Api-Key") != "" {
		t.Errorf("authorization credential sent %v", r.Header)
	}
	rawRequest(t, p.addr, "GET /corral/credential/"+p.tok+"/git/o/r.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nAuthorization: Basic Ym94OmJveA==\r\n\r\n")
	r = up.last(t)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:ghp_x"))
	if r.Header.Get("Authorization") != want || r.URL.Path != "/base/o/r.git/info/refs" || r.URL.RawQuery != "service=git-upload-pack" {
		t.Errorf("basic credential: %s %v", r.URL, r.Header)
	}
}

func TestCredentialVerifiesTLS(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	// No RootCAs: the system roots, which do not know the test CA.
	p, cl := startCredProxy(t, []Credential{{Name: "a", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret(realKey)}})
	resp, body := rawRequest(t, p.addr, "GET /corral/credential/"+p.tok+"/a/v1/models HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n")
	if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "certificate") {
		t.Errorf("status %d body %q, want 502 naming the certificate", resp.StatusCode, body)
	}
	if len(up.all()) != 0 {
		t.Error("the upstream got a request over an unverified connection")
	}
	if ev := cl.all(2); len(ev) != 1 || ev[0].Status != http.StatusBadGateway || strings.Contains(ev[0].Err, realKey) {
		t.Errorf("log = %+v", ev)
	}
}

func TestCredentialRefusals(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	creds := []Credential{
		{Name: "a", Upstream: up.srv.URL + "/base", Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()},
		{Name: "nl", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret("x\r\nEvil: 1"), RootCAs: up.pool()},
		{Name: "down", Upstream: up.srv.URL, Header: HeaderAPIKey, RootCAs: up.pool(),
			Secret: func(context.Context) (string, error) { return "", errors.New("keychain locked") }},
		// A name resolving to loopback is not dialled (no explicit range).
		{Name: "named", Upstream: "https://upstream.test", Header: HeaderAPIKey, Secret: staticSecret(realKey)},
	}
	p, _ := startCredProxy(t, creds)
	for _, tc := range []struct {
		target string
		status int
	}{
		{"/corral/credential/" + p.tok + "/nope/x", 404},
		{"/corral/credential/" + p.tok + "/a/../x", 400},
		{"/corral/credential/" + p.tok + "/a/v1/../../x", 400},
		{"/corral/credential/" + p.tok + "/a/%2e%2e/x", 400},
		{"/corral/credential/" + p.tok + "/a/x%2fy", 400},
		{"/corral/credential/" + p.tok + "/a//x", 400},
		{"/corral/credential/" + p.tok + "/a/./x", 400},
		{"/corral/credential/" + p.tok + "/nl/x", 502},
		{"/corral/credential/" + p.tok + "/down/x", 502},
		{"/corral/credential/" + p.tok + "/named/x", 502},
		// An absolute URI to another host is a plain proxy request: denied
		// by the (empty) policy, never given the credential.
		{"http://upstream.test/corral/credential/a/x", 403},
		{"/v1/messages", 400},
	} {
		resp, body := rawRequest(t, p.addr, "GET "+tc.target+" HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n\r\n")
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d (%q), want %d", tc.target, resp.StatusCode, body, tc.status)
		}
		if strings.Contains(body, realKey) {
			t.Errorf("%s: the answer holds the key", tc.target)
		}
	}
	if n := len(up.all()); n != 0 {
		t.Errorf("upstream got %d requests", n)
	}
}

func TestNewCredentialBrokerValidates(t *testing.T) {
	s := staticSecret("x")
	_, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{
		{Name: "Bad/Name", Upstream: "https://a.test", Header: HeaderAPIKey, Secret: s},
		{Name: "http", Upstream: "http://a.test", Header: HeaderAPIKey, Secret: s},
		{Name: "user", Upstream: "https://u:p@a.test", Header: HeaderAPIKey, Secret: s},
		{Name: "query", Upstream: "https://a.test/?x=1", Header: HeaderAPIKey, Secret: s},
		{Name: "hdr", Upstream: "https://a.test", Header: "cookie", Secret: s},
		{Name: "nosecret", Upstream: "https://a.test", Header: HeaderAPIKey},
		{Name: "ok", Upstream: "https://a.test", Header: HeaderAPIKey, Secret: s},
		{Name: "ok", Upstream: "https://a.test", Header: HeaderAPIKey, Secret: s},
	}})
	for _, want := range []string{`"Bad/Name"`, `"http"`, `"user"`, `"query"`, `"hdr"`, `"nosecret"`, "defined twice"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func FuzzCredentialPath(f *testing.F) {
	for _, s := range []string{"/corral/credential/t/a/v1/messages", "/corral/credential/t/a/../b", "/corral/credential/t/a/%2E%2E/", "/corral/credential/t/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		_, _, _, rest, err := credentialPath(p)
		if err != nil {
			return
		}
		if !strings.HasPrefix(rest, "/") || strings.Contains(rest, "/../") || strings.HasSuffix(rest, "/..") ||
			strings.Contains(rest, "//") || strings.Contains(strings.ToLower(rest), "%2e") {
			t.Fatalf("credentialPath(%q) accepted rest %q", p, rest)
		}
	})
}
