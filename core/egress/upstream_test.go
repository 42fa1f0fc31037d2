package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	proxyUser = "alice"
	proxyPass = "s3cret-proxy-pass-7f3a"
)

// fakeUpstreamProxy is an upstream proxy written for the tests: HTTP
// (CONNECT and absolute-form) or SOCKS5, on 127.0.0.1, with user and
// password. It records every request it sees, refused ones included, and
// connects only to 127.0.0.1.
type fakeUpstreamProxy struct {
	scheme string
	addr   string
	refuse bool // answer every request with a refusal (403, SOCKS5 reply 2)

	mu   sync.Mutex
	seen []string // "CONNECT 127.0.0.1:1234", "GET http://127.0.0.1:1234/x"
	auth []string // the credentials each request carried ("user:pass" or "")
}

func (f *fakeUpstreamProxy) record(what, auth string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, what)
	f.auth = append(f.auth, auth)
}

func (f *fakeUpstreamProxy) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func startUpstreamProxy(t *testing.T, scheme string) *fakeUpstreamProxy {
	t.Helper()
	f := &fakeUpstreamProxy{scheme: scheme}
	f.addr = serveConns(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
		if scheme == ProxySOCKS5 {
			f.socks(c)
		} else {
			f.http(c)
		}
	})
	return f
}

func dialLoopback(target string) (net.Conn, error) {
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test proxy: refusing %q", target)
	}
	return net.DialTimeout("tcp", target, 5*time.Second)
}

func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	go func() { io.Copy(a, b); done <- struct{}{} }() //nolint:errcheck
	go func() { io.Copy(b, a); done <- struct{}{} }() //nolint:errcheck
	<-done
}

func (f *fakeUpstreamProxy) http(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		auth := ""
		if u, p, ok := (&http.Request{Header: http.Header{"Authorization": req.Header["Proxy-Authorization"]}}).BasicAuth(); ok {
			auth = u + ":" + p
		}
		target := req.RequestURI
		f.record(req.Method+" "+target, auth)
		switch {
		case auth != proxyUser+":"+proxyPass:
			io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic realm=\"t\"\r\nContent-Length: 0\r\n\r\n") //nolint:errcheck
			continue
		case f.refuse:
			io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n") //nolint:errcheck
			continue
		}
		if req.Method == http.MethodConnect {
			up, err := dialLoopback(target)
			if err != nil {
				io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n") //nolint:errcheck
				return
			}
			defer up.Close()
			io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n") //nolint:errcheck
			if n := br.Buffered(); n > 0 {
				b, _ := br.Peek(n)
				up.Write(b) //nolint:errcheck
			}
			relay(c, up)
			return
		}
		up, err := dialLoopback(req.URL.Host)
		if err != nil {
			return
		}
		req.RequestURI = ""
		req.Header.Del("Proxy-Authorization")
		req.Write(up) //nolint:errcheck
		resp, err := http.ReadResponse(bufio.NewReader(up), req)
		if err != nil {
			up.Close()
			return
		}
		resp.Write(c) //nolint:errcheck
		resp.Body.Close()
		up.Close()
	}
}

func (f *fakeUpstreamProxy) socks(c net.Conn) {
	var h [2]byte
	if _, err := io.ReadFull(c, h[:]); err != nil || h[0] != 5 {
		return
	}
	methods := make([]byte, h[1])
	io.ReadFull(c, methods) //nolint:errcheck
	if !bytes.Contains(methods, []byte{2}) {
		f.record("socks5 no-auth offered", "")
		c.Write([]byte{5, 0xff}) //nolint:errcheck
		return
	}
	c.Write([]byte{5, 2}) //nolint:errcheck
	var v [2]byte
	io.ReadFull(c, v[:]) //nolint:errcheck
	user := make([]byte, v[1])
	io.ReadFull(c, user) //nolint:errcheck
	var pl [1]byte
	io.ReadFull(c, pl[:]) //nolint:errcheck
	pass := make([]byte, pl[0])
	io.ReadFull(c, pass) //nolint:errcheck
	auth := string(user) + ":" + string(pass)
	if auth != proxyUser+":"+proxyPass {
		f.record("socks5 auth", auth)
		c.Write([]byte{1, 1}) //nolint:errcheck
		return
	}
	c.Write([]byte{1, 0}) //nolint:errcheck
	var rq [4]byte
	if _, err := io.ReadFull(c, rq[:]); err != nil || rq[1] != 1 {
		return
	}
	var ip netip.Addr
	switch rq[3] {
	case 1:
		var a [4]byte
		io.ReadFull(c, a[:]) //nolint:errcheck
		ip = netip.AddrFrom4(a)
	case 4:
		var a [16]byte
		io.ReadFull(c, a[:]) //nolint:errcheck
		ip = netip.AddrFrom16(a)
	default:
		f.record("socks5 CONNECT by name", auth)
		c.Write([]byte{5, 8, 0, 1, 0, 0, 0, 0, 0, 0}) //nolint:errcheck
		return
	}
	var pb [2]byte
	io.ReadFull(c, pb[:]) //nolint:errcheck
	target := netip.AddrPortFrom(ip, binary.BigEndian.Uint16(pb[:])).String()
	f.record("CONNECT "+target, auth)
	if f.refuse {
		c.Write([]byte{5, 2, 0, 1, 0, 0, 0, 0, 0, 0}) //nolint:errcheck
		return
	}
	up, err := dialLoopback(target)
	if err != nil {
		c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0}) //nolint:errcheck
		return
	}
	defer up.Close()
	c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0}) //nolint:errcheck
	relay(c, up)
}

// brokerWithProxy starts a broker whose allowed traffic leaves through f;
// its operational log is written to logBuf.
func brokerWithProxy(t *testing.T, f *fakeUpstreamProxy, pass string, noProxy []string, mod func(*Config)) (*testProxy, *bytes.Buffer) {
	t.Helper()
	np, err := ParseNoProxy(noProxy)
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &lockedBuffer{}
	p := startProxy(t, []string{"allowed.test:*", "direct.test:*"}, []string{"127.0.0.0/8"}, func(c *Config) {
		c.Upstream = &UpstreamProxy{Scheme: f.scheme, Addr: f.addr, User: proxyUser, NoProxy: np,
			Password: func(context.Context) (string, error) { return pass, nil }}
		c.Logger = slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if mod != nil {
			mod(c)
		}
	})
	return p, &logBuf.b
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// noSecret fails the test if the proxy password is in any of texts.
func noSecret(t *testing.T, where string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, proxyPass) {
			t.Errorf("the proxy password is in %s: %q", where, s)
		}
	}
}

func decisionsText(p *testProxy) string {
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	return fmt.Sprintf("%+v", p.log.ds)
}

func TestUpstreamProxyTunnels(t *testing.T) {
	for _, scheme := range []string{ProxyHTTP, ProxySOCKS5} {
		t.Run(scheme, func(t *testing.T) {
			f := startUpstreamProxy(t, scheme)
			p, logs := brokerWithProxy(t, f, proxyPass, []string{"direct.test"}, nil)
			echo := echoServer(t)
			port := portOf(t, echo)

			// Allowed: through the proxy, for the checked address.
			st, c, br, body := rawConnect(t, p.addr, "allowed.test:"+port)
			if st != 200 {
				t.Fatalf("allowed CONNECT: %d %s", st, body)
			}
			echoRoundTrip(t, c, br, "hello through the proxy")
			c.Close()
			want := "CONNECT 127.0.0.1:" + port
			if got := f.requests(); len(got) != 1 || got[0] != want {
				t.Fatalf("proxy saw %q, want [%q]", got, want)
			}
			if f.auth[0] != proxyUser+":"+proxyPass {
				t.Errorf("proxy credentials = %q", f.auth[0])
			}

			// Denied ones never reach the proxy: a host off the list, a
			// private address no range allows, the proxy itself (its
			// loopback port, which the range would otherwise allow), and
			// the broker's own port.
			_, proxyPort, _ := net.SplitHostPort(f.addr)
			for _, target := range []string{"denied.test:" + port, "10.0.0.1:" + port, "127.0.0.1:" + proxyPort, "allowed.test:" + proxyPort, "0.0.0.0:" + proxyPort} {
				st, _, _, body := rawConnect(t, p.addr, target)
				if st != 403 {
					t.Errorf("CONNECT %s: %d %s, want 403", target, st, body)
				}
			}
			if got := f.requests(); len(got) != 1 {
				t.Errorf("denied requests reached the proxy: %q", got)
			}

			// no_proxy: dialled directly, still decided.
			st, c, br, body = rawConnect(t, p.addr, "direct.test:"+port)
			if st != 200 {
				t.Fatalf("no_proxy CONNECT: %d %s", st, body)
			}
			echoRoundTrip(t, c, br, "direct")
			c.Close()
			if got := f.requests(); len(got) != 1 {
				t.Errorf("a no_proxy destination went through the proxy: %q", got)
			}
			noSecret(t, "the decision log", decisionsText(p))
			noSecret(t, "the broker's log", logs.String())
		})
	}
}

func TestUpstreamProxyForwardsHTTP(t *testing.T) {
	for _, scheme := range []string{ProxyHTTP, ProxySOCKS5} {
		t.Run(scheme, func(t *testing.T) {
			f := startUpstreamProxy(t, scheme)
			p, logs := brokerWithProxy(t, f, proxyPass, nil, nil)
			var got http.Header
			var gotHost string
			up := newUpstream(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got, gotHost = r.Header.Clone(), r.Host
				io.WriteString(w, "origin says hi") //nolint:errcheck
			}))
			port := portOf(t, up.Listener.Addr().String())
			resp, body := rawRequest(t, p.addr, "GET http://allowed.test:"+port+"/x?y=1 HTTP/1.1\r\nHost: allowed.test:"+port+
				"\r\nProxy-Authorization: Basic Ym94OmJveA==\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != 200 || body != "origin says hi" {
				t.Fatalf("status %d body %q", resp.StatusCode, body)
			}
			if gotHost != "allowed.test:"+port {
				t.Errorf("origin Host = %q", gotHost)
			}
			if v := got.Get("Proxy-Authorization"); v != "" {
				t.Errorf("origin got Proxy-Authorization %q", v)
			}
			want := "CONNECT 127.0.0.1:" + port // a tunnel to the checked address, for both kinds
			if r := f.requests(); len(r) != 1 || r[0] != want {
				t.Fatalf("proxy saw %q, want [%q]", r, want)
			}
			if f.auth[0] != proxyUser+":"+proxyPass {
				t.Errorf("proxy got credentials %q, not the broker's", f.auth[0])
			}
			resp, _ = rawRequest(t, p.addr, "GET http://denied.test:"+port+"/ HTTP/1.1\r\nHost: denied.test\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != 403 {
				t.Errorf("denied: %d", resp.StatusCode)
			}
			if r := f.requests(); len(r) != 1 {
				t.Errorf("a denied request reached the proxy: %q", r)
			}
			noSecret(t, "the decision log", decisionsText(p))
			noSecret(t, "the broker's log", logs.String())
		})
	}
}

func TestUpstreamProxyCarriesCredentialRoutes(t *testing.T) {
	for _, scheme := range []string{ProxyHTTP, ProxySOCKS5} {
		t.Run(scheme, func(t *testing.T) {
			f := startUpstreamProxy(t, scheme)
			up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }) //nolint:errcheck
			cl := &memCredLog{}
			b, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{{Name: "anthropic", Upstream: up.srv.URL,
				Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()}}, Resolver: testResolver{}, Log: cl})
			if err != nil {
				t.Fatal(err)
			}
			p, logs := brokerWithProxy(t, f, proxyPass, nil, func(c *Config) {
				c.Credentials = b
				c.SelfAddrs = []string{"192.168.5.4:4242"}
			})
			tok, err := b.NewToken("s1")
			if err != nil {
				t.Fatal(err)
			}
			resp, body := rawRequest(t, p.addr, "GET /corral/credential/"+tok+"/anthropic/v1/models HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nConnection: close\r\n\r\n")
			if resp.StatusCode != 200 || body != "ok" {
				t.Fatalf("status %d body %q", resp.StatusCode, body)
			}
			if k := up.last(t).Header.Get("X-Api-Key"); k != realKey {
				t.Errorf("upstream key %q", k)
			}
			want := "CONNECT " + strings.TrimPrefix(up.srv.URL, "https://")
			if r := f.requests(); len(r) != 1 || r[0] != want {
				t.Fatalf("proxy saw %q, want [%q]", r, want)
			}
			noSecret(t, "the credential log", fmt.Sprintf("%+v", cl.all(1)))
			noSecret(t, "the broker's log", logs.String())
		})
	}
}

func TestUpstreamProxyFailures(t *testing.T) {
	closed := listenUpstream(t)
	deadAddr := closed.Addr().String()
	closed.Close()
	cases := []struct {
		name, scheme, pass string
		refuse, dead       bool
		reason             Reason
	}{
		{"http wrong password", ProxyHTTP, "wrong", false, false, ReasonProxyRefused},
		{"http refuses", ProxyHTTP, proxyPass, true, false, ReasonProxyRefused},
		{"socks5 wrong password", ProxySOCKS5, "wrong", false, false, ReasonProxyRefused},
		{"socks5 refuses", ProxySOCKS5, proxyPass, true, false, ReasonProxyRefused},
		{"http down", ProxyHTTP, proxyPass, false, true, ReasonProxyFailed},
		{"socks5 down", ProxySOCKS5, proxyPass, false, true, ReasonProxyFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := startUpstreamProxy(t, tc.scheme)
			f.refuse = tc.refuse
			if tc.dead {
				f.addr = deadAddr
			}
			p, logs := brokerWithProxy(t, f, tc.pass, nil, nil)
			echo := echoServer(t)
			port := portOf(t, echo)
			check := func(what string, status int, reasonHeader, body string) {
				t.Helper()
				if status != http.StatusBadGateway || reasonHeader != string(tc.reason) {
					t.Errorf("%s: %d %q %q, want 502 %s", what, status, reasonHeader, body, tc.reason)
				}
				// An absolute-form request's line is written after its answer.
				var d Decision
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if d = p.log.last(); !d.Allowed {
						break
					}
				}
				if d.Allowed || d.Reason != tc.reason || d.Detail == "" || d.Host != "allowed.test" {
					t.Errorf("%s: decision %+v, want a %s line with its detail", what, d, tc.reason)
				}
				noSecret(t, what+": the response", body)
			}
			st, _, _, body := rawConnect(t, p.addr, "allowed.test:"+port)
			check("CONNECT", st, string(p.log.last().Reason), body)
			{
				// An absolute-form request goes through the same tunnel.
				resp, body := rawRequest(t, p.addr, "GET http://allowed.test:"+port+"/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
				check("GET", resp.StatusCode, resp.Header.Get("X-Corral-Egress-Reason"), body)
				if h := resp.Header.Get("Proxy-Authenticate"); h != "" {
					t.Errorf("the proxy's challenge reached the box: %q", h)
				}
			}
			noSecret(t, "the decision log", decisionsText(p))
			noSecret(t, "the broker's log", logs.String())
		})
	}
}

func TestUpstreamProxyCredentialsUnreadable(t *testing.T) {
	f := startUpstreamProxy(t, ProxyHTTP)
	p := startProxy(t, []string{"allowed.test:*"}, []string{"127.0.0.0/8"}, func(c *Config) {
		c.Upstream = &UpstreamProxy{Scheme: ProxyHTTP, Addr: f.addr, User: proxyUser,
			Password: func(context.Context) (string, error) { return "", errors.New("keychain item not found") }}
	})
	st, _, _, body := rawConnect(t, p.addr, "allowed.test:"+portOf(t, echoServer(t)))
	if st != 502 || !strings.Contains(body, "keychain item not found") {
		t.Errorf("%d %q", st, body)
	}
	if d := p.log.last(); d.Reason != ReasonProxyFailed {
		t.Errorf("decision %+v", d)
	}
	if r := f.requests(); len(r) != 0 {
		t.Errorf("the proxy was asked without credentials: %q", r)
	}
}

func TestParseUpstreamProxy(t *testing.T) {
	good := map[string]string{
		"http://proxy.example.com:3128":  "proxy.example.com:3128",
		"socks5://127.0.0.1:1080":        "127.0.0.1:1080",
		"http://[::1]:3128/":             "[::1]:3128",
		"http://PROXY.Example.com.:8080": "proxy.example.com:8080",
	}
	for in, want := range good {
		if _, addr, err := ParseUpstreamProxy(in); err != nil || addr != want {
			t.Errorf("%q: %q, %v; want %q", in, addr, err, want)
		}
	}
	for _, in := range []string{"https://p.example:3128", "http://u:p@p.example:3128", "http://p.example", "http://p.example:0",
		"http://p.example:3128/path", "http://p.example:3128?q", "socks4://p.example:1080", "p.example:3128", "http://:3128", "http://[fe80::1%25eth0]:3128"} {
		if _, _, err := ParseUpstreamProxy(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	n, err := ParseNoProxy([]string{"Internal.Example.com", "*.corp.example", ".lan.example", "10.0.0.0/8", "192.0.2.7"})
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr
	for _, c := range []struct {
		host   string
		ip     netip.Addr
		direct bool
	}{
		{"internal.example.com", ip("203.0.113.1"), true},
		{"x.internal.example.com", ip("203.0.113.1"), false},
		{"a.corp.example", ip("203.0.113.1"), true},
		{"corp.example", ip("203.0.113.1"), false},
		{"evilcorp.example", ip("203.0.113.1"), false},
		{"b.lan.example", ip("203.0.113.1"), true},
		{"api.example.net", ip("10.1.2.3"), true},
		{"api.example.net", ip("::ffff:10.1.2.3"), true},
		{"api.example.net", ip("192.0.2.7"), true},
		{"api.example.net", ip("192.0.2.8"), false},
	} {
		if got := n.Direct(c.host, c.ip); got != c.direct {
			t.Errorf("Direct(%s, %s) = %v", c.host, c.ip, got)
		}
	}
	for _, bad := range []string{"*", "a*.example", "http://x.example", "x.example:80", ""} {
		if _, err := ParseNoProxy([]string{bad}); err == nil {
			t.Errorf("no_proxy %q accepted", bad)
		}
	}
}

// A credential route whose proxy refuses: 502 with the reason, and the
// credential line records it, without the proxy's password.
func TestUpstreamProxyRefusesCredentialRoute(t *testing.T) {
	f := startUpstreamProxy(t, ProxyHTTP)
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }) //nolint:errcheck
	cl := &memCredLog{}
	b, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{{Name: "anthropic", Upstream: up.srv.URL,
		Header: HeaderAPIKey, Secret: staticSecret(realKey), RootCAs: up.pool()}}, Resolver: testResolver{}, Log: cl})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := brokerWithProxy(t, f, "wrong", nil, func(c *Config) {
		c.Credentials = b
		c.SelfAddrs = []string{"192.168.5.4:4242"}
	})
	tok, err := b.NewToken("s1")
	if err != nil {
		t.Fatal(err)
	}
	resp, body := rawRequest(t, p.addr, "GET /corral/credential/"+tok+"/anthropic/v1/models HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != 502 || resp.Header.Get("X-Corral-Egress-Reason") != string(ReasonProxyRefused) || !strings.Contains(body, "407") {
		t.Fatalf("status %d %q body %q", resp.StatusCode, resp.Header.Get("X-Corral-Egress-Reason"), body)
	}
	ev := cl.all(1)
	if len(ev) != 1 || ev[0].Status != 502 || !strings.Contains(ev[0].Err, string(ReasonProxyRefused)) && !strings.Contains(ev[0].Err, "upstream proxy refused") {
		t.Errorf("credential line %+v", ev)
	}
	noSecret(t, "the credential log", fmt.Sprintf("%+v", ev))
	if strings.Contains(fmt.Sprintf("%+v", ev), realKey) {
		t.Error("the credential line holds the key")
	}
}

// A proxy that answers nothing, too much, or not in its protocol: the box
// gets 502 upstream-proxy-failed within the dial timeout, and the broker
// reads at most maxProxyHead of an answer.
func TestUpstreamProxyMisbehaves(t *testing.T) {
	silent := serveConns(t, func(c net.Conn) { time.Sleep(5 * time.Second) })
	flood := serveConns(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n") //nolint:errcheck
		for range 64 {
			if _, err := io.WriteString(c, "X-Pad: "+strings.Repeat("a", 1000)+"\r\n"); err != nil {
				return
			}
		}
	})
	garbage := serveConns(t, func(c net.Conn) { io.WriteString(c, "\x04\x5a\x00\x00\x00\x00\x00\x00\r\n\r\n") }) //nolint:errcheck
	for _, tc := range []struct {
		name, scheme, addr string
	}{
		{"http silent", ProxyHTTP, silent},
		{"socks5 silent", ProxySOCKS5, silent},
		{"http flood", ProxyHTTP, flood},
		{"http garbage", ProxyHTTP, garbage},
		{"socks5 garbage", ProxySOCKS5, garbage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, []string{"allowed.test:*"}, []string{"127.0.0.0/8"}, func(c *Config) {
				c.DialTimeout = 500 * time.Millisecond
				c.Upstream = &UpstreamProxy{Scheme: tc.scheme, Addr: tc.addr}
			})
			start := time.Now()
			st, _, _, body := rawConnect(t, p.addr, "allowed.test:"+portOf(t, echoServer(t)))
			if st != 502 || time.Since(start) > 4*time.Second {
				t.Errorf("%d %q after %v, want 502 within the dial timeout", st, body, time.Since(start))
			}
			if d := p.log.last(); d.Reason != ReasonProxyFailed {
				t.Errorf("decision %+v, want %s", d, ReasonProxyFailed)
			}
		})
	}
}

// An IPv6 destination goes to the proxy as an IPv6 address (SOCKS5
// address type 4, CONNECT [::1]:PORT), never as a name.
func TestUpstreamProxyIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); io.Copy(c, c) }() //nolint:errcheck
		}
	}()
	port := portOf(t, ln.Addr().String())
	for _, scheme := range []string{ProxyHTTP, ProxySOCKS5} {
		t.Run(scheme, func(t *testing.T) {
			f := startUpstreamProxy(t, scheme)
			p := startProxy(t, nil, []string{"::1/128"}, func(c *Config) {
				c.Upstream = &UpstreamProxy{Scheme: scheme, Addr: f.addr, User: proxyUser,
					Password: func(context.Context) (string, error) { return proxyPass, nil }}
			})
			st, c, br, body := rawConnect(t, p.addr, "[::1]:"+port)
			if st != 200 {
				t.Fatalf("CONNECT [::1]: %d %s", st, body)
			}
			echoRoundTrip(t, c, br, "six")
			c.Close()
			if got, want := f.requests(), "CONNECT [::1]:"+port; len(got) != 1 || got[0] != want {
				t.Errorf("proxy saw %q, want [%q]", got, want)
			}
		})
	}
}

// FuzzUpstreamProxyConfig: the parsers of upstream_proxy's url and
// no_proxy never panic, never accept credentials in the URL, and give an
// address that parses again to itself.
func FuzzUpstreamProxyConfig(f *testing.F) {
	for _, s := range []string{"http://proxy.example.test:3128", "socks5://[::1]:1080", "http://a:b@p:1", "*.corp.example", "10.0.0.0/8", "::ffff:10.0.0.1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if scheme, addr, err := ParseUpstreamProxy(s); err == nil {
			if strings.Contains(addr, "@") {
				t.Fatalf("%q: address %q holds userinfo", s, addr)
			}
			if _, again, err := ParseUpstreamProxy(scheme + "://" + addr); err != nil || again != addr {
				t.Fatalf("%q: %q does not parse to itself: %q %v", s, addr, again, err)
			}
		}
		if n, err := ParseNoProxy([]string{s}); err == nil {
			n.Direct(s, netip.Addr{})
		}
	})
}
