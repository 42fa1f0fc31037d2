package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"
)

var benchEntries = []string{"allowed.test:*", "*.wild.test:*"}

func TestConnectDecisions(t *testing.T) {
	echo := echoServer(t)
	ep := portOf(t, echo)
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)
	tests := []struct {
		target string
		status int
		reason Reason
	}{
		{"allowed.test:" + ep, 200, ReasonAllowed},
		{"ALLOWED.TEST.:" + ep, 200, ReasonAllowed},
		{"sub.wild.test:" + ep, 200, ReasonAllowed},
		{"a.b.wild.test:" + ep, 200, ReasonAllowed},
		{"127.0.0.1:" + ep, 200, ReasonAllowed}, // IP literal inside an allowed range
		{"wild.test:" + ep, 403, ReasonHostNotAllowed},
		{"badwild.test:" + ep, 403, ReasonHostNotAllowed},
		{"denied.test:" + ep, 403, ReasonHostNotAllowed},
		{"[::1]:" + ep, 403, ReasonIPLiteral},
		{"unresolvable.test:443", 403, ReasonHostNotAllowed},
		{"user@allowed.test:" + ep, 400, ReasonUserinfo},
		{"allowed.test", 400, ReasonMalformedAuthority},
		{"allowed.test:99999", 400, ReasonMalformedAuthority},
		{"allowed.test:" + portOf(t, p.addr), 403, ReasonSelf},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			status, c, br, body := rawConnect(t, p.addr, tt.target)
			if status != tt.status {
				t.Fatalf("status = %d, want %d (body %q)", status, tt.status, body)
			}
			d := p.log.last()
			if d.Reason != tt.reason || d.Kind != KindConnect {
				t.Fatalf("logged %+v, want reason %q", d, tt.reason)
			}
			if status == 200 {
				defer c.Close()
				echoRoundTrip(t, c, br, "ping")
				if d.IP.String() != "127.0.0.1" {
					t.Errorf("logged IP %v, want 127.0.0.1", d.IP)
				}
				return
			}
			if status == 403 && !strings.Contains(body, string(tt.reason)) {
				t.Errorf("403 body %q does not name reason %q", body, tt.reason)
			}
			if tt.reason == ReasonHostNotAllowed {
				host, _, _ := strings.Cut(tt.target, ":")
				if want := "corral allow box1 " + host; !strings.Contains(body, want) {
					t.Errorf("body %q lacks hint %q", body, want)
				}
			}
		})
	}
}

func TestConnectPrivateAndResolveFailure(t *testing.T) {
	echo := echoServer(t)
	ep := portOf(t, echo)
	// No ranges: loopback destinations and literals are denied.
	p := startProxy(t, []string{"allowed.test:*", "unresolvable.test:*"}, nil, nil)
	for target, want := range map[string]Reason{
		"allowed.test:" + ep:    ReasonPrivateIP,
		"127.0.0.1:" + ep:       ReasonIPLiteral,
		"unresolvable.test:443": ReasonResolveFailed,
	} {
		status, _, _, body := rawConnect(t, p.addr, target)
		wantStatus := 403
		if want == ReasonResolveFailed {
			wantStatus = 502
		}
		if status != wantStatus || !strings.Contains(body, string(want)) {
			t.Errorf("CONNECT %s = %d %q, want %d %s", target, status, body, wantStatus, want)
		}
		if d := p.log.last(); d.Reason != want || d.Allowed {
			t.Errorf("CONNECT %s logged %+v", target, d)
		}
	}
}

func TestGoClientThroughProxy(t *testing.T) {
	var gotHost, gotProxyConn, gotURI string
	plain := newUpstream(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotProxyConn, gotURI = r.Host, r.Header.Get("Proxy-Connection"), r.RequestURI
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "hello %s %s", r.Method, body)
	}))
	defer plain.Close()
	// The upstream's certificate names allowed.test: the client asks for
	// the name it CONNECTs to (the broker refuses any other).
	cert, pool := testCert(t, "allowed.test", "badwild.test")
	secure := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure") //nolint:errcheck
	}))
	secure.Listener.Close()
	secure.Listener = listenUpstream(t)
	secure.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	secure.StartTLS()
	defer secure.Close()
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)

	proxyURL, _ := url.Parse("http://" + p.addr)
	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyURL(proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: pool},
	}, Timeout: 10 * time.Second}
	pp, sp := portOf(t, plain.Listener.Addr().String()), portOf(t, secure.Listener.Addr().String())

	get := func(u string) (int, string, http.Header) {
		t.Helper()
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}

	status, body, _ := get("http://allowed.test:" + pp + "/path?q=1")
	if status != 200 || body != "hello GET " {
		t.Fatalf("allowed GET = %d %q", status, body)
	}
	if gotHost != "allowed.test:"+pp || gotProxyConn != "" || gotURI != "/path?q=1" {
		t.Errorf("upstream saw Host=%q Proxy-Connection=%q URI=%q", gotHost, gotProxyConn, gotURI)
	}
	if d := p.log.last(); d.Kind != KindHTTP || !d.Allowed || d.Host != "allowed.test" {
		t.Errorf("logged %+v", d)
	}
	// keep-alive: a second request, and a POST with a body
	resp, err := client.Post("http://sub.wild.test:"+pp+"/", "text/plain", strings.NewReader("data"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "hello POST data" {
		t.Fatalf("POST = %d %q", resp.StatusCode, b)
	}

	status, body, hdr := get("http://denied.test:" + pp + "/")
	if status != 403 || !strings.Contains(body, "corral allow box1 denied.test") ||
		hdr.Get("X-Corral-Egress-Reason") != string(ReasonHostNotAllowed) {
		t.Errorf("denied GET = %d %q %v", status, body, hdr)
	}
	status, body, _ = get("http://wild.test:" + pp + "/")
	if status != 403 {
		t.Errorf("apex GET = %d %q", status, body)
	}

	status, body, _ = get("https://allowed.test:" + sp + "/")
	if status != 200 || body != "secure" {
		t.Errorf("CONNECT GET = %d %q", status, body)
	}
	if _, err := client.Get("https://badwild.test:" + sp + "/"); err == nil {
		t.Error("CONNECT to badwild.test succeeded")
	}
	if d := p.log.last(); d.Reason != ReasonHostNotAllowed || d.Host != "badwild.test" {
		t.Errorf("logged %+v", d)
	}
}

func TestCurlThroughProxy(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not installed")
	}
	plain := newUpstream(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "plain") //nolint:errcheck
	}))
	defer plain.Close()
	secure := newUpstream(t, true, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure") //nolint:errcheck
	}))
	defer secure.Close()
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)
	pp, sp := portOf(t, plain.Listener.Addr().String()), portOf(t, secure.Listener.Addr().String())
	tests := []struct {
		args   []string
		status string
		body   string
	}{
		{[]string{"http://allowed.test:" + pp + "/"}, "200", "plain"},
		{[]string{"--proxytunnel", "http://allowed.test:" + pp + "/"}, "200", "plain"},
		{[]string{"-k", "https://allowed.test:" + sp + "/"}, "200", "secure"},
		{[]string{"-k", "https://x.wild.test:" + sp + "/"}, "200", "secure"},
		{[]string{"http://denied.test:" + pp + "/"}, "403", "corral allow box1 denied.test"},
		{[]string{"http://wild.test:" + pp + "/"}, "403", "host-not-allowed"},
		{[]string{"http://127.0.0.1:" + pp + "/"}, "200", "plain"},
		{[]string{"http://[::1]:" + pp + "/"}, "403", "ip-literal"},
		{[]string{"-k", "https://denied.test:" + sp + "/"}, "403", ""},
	}
	for _, tt := range tests {
		args := append([]string{"-sS", "--max-time", "20", "-x", "http://" + p.addr,
			"-w", "\n%{http_code}%{http_connect}"}, tt.args...)
		cmd := exec.Command(curl, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"} // no proxy variables from the environment
		out, _ := cmd.CombinedOutput()
		s := string(out)
		i := strings.LastIndexByte(s, '\n')
		body, codes := s[:max(i, 0)], s[i+1:]
		// %{http_code}%{http_connect}: a denied CONNECT shows as "000403"
		if !strings.Contains(codes, tt.status) || !strings.Contains(body, tt.body) {
			t.Errorf("curl %v: codes %q body %q; want %s %q", tt.args, codes, body, tt.status, tt.body)
		}
	}
}

func TestHeaderTimeoutSlowloris(t *testing.T) {
	p := startProxy(t, benchEntries, nil, func(c *Config) { c.HeaderTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Dribble a request head, never finishing it.
	io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\n") //nolint:errcheck
	go func() {
		for range 50 {
			if _, err := io.WriteString(c, "X: y\r\n"); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if !waitClosed(c, c, 10*time.Second) {
		t.Fatal("connection with an unfinished head was not closed")
	}
}

func TestHeaderTooLarge(t *testing.T) {
	p := startProxy(t, benchEntries, nil, func(c *Config) { c.MaxHeaderBytes = 1024 })
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go io.WriteString(c, "GET http://allowed.test/ HTTP/1.1\r\nX: "+strings.Repeat("a", 64<<10)+"\r\n\r\n") //nolint:errcheck
	c.SetReadDeadline(time.Now().Add(10 * time.Second))                                                     //nolint:errcheck
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

func TestMalformedRequest(t *testing.T) {
	p := startProxy(t, benchEntries, nil, nil)
	for _, req := range []string{"NONSENSE\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET https://allowed.test/ HTTP/1.1\r\n\r\n",
		"GET http://u:p@allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n"} {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, req)                              //nolint:errcheck
		c.SetReadDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		c.Close()
		if err != nil || resp.StatusCode != 400 {
			t.Errorf("%q: %v %v, want 400", req, resp, err)
		}
	}
}

func TestTunnelCap(t *testing.T) {
	ep := portOf(t, echoServer(t))
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, func(c *Config) { c.MaxTunnels = 2 })
	target := "allowed.test:" + ep
	var open []net.Conn
	for range 2 {
		status, c, br, _ := rawConnect(t, p.addr, target)
		if status != 200 {
			t.Fatalf("status %d", status)
		}
		echoRoundTrip(t, c, br, "x")
		open = append(open, c)
	}
	status, _, _, body := rawConnect(t, p.addr, target)
	if status != 503 || !strings.Contains(body, "too many open tunnels") {
		t.Fatalf("third tunnel = %d %q, want 503", status, body)
	}
	open[0].Close()
	eventually(t, 10*time.Second, "a tunnel slot to free up", func() bool { return p.srv.OpenTunnels() < 2 })
	status, c, _, _ := rawConnect(t, p.addr, target)
	if status != 200 {
		t.Fatalf("after close: status %d", status)
	}
	c.Close()
	open[1].Close()
}

func TestTunnelIdleTimeout(t *testing.T) {
	ep := portOf(t, echoServer(t))
	// A source that writes one byte every 20 ms for 2 s, then closes.
	src := listenUpstream(t)
	defer src.Close()
	sent := make(chan int, 1)
	go func() {
		c, err := src.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		n := 0
		defer func() { sent <- n }()
		for range 100 {
			if _, err := c.Write([]byte{'.'}); err != nil {
				t.Logf("source write: %v", err)
				return
			}
			n++
			time.Sleep(20 * time.Millisecond)
		}
	}()
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, func(c *Config) { c.IdleTimeout = 500 * time.Millisecond })

	// Silent tunnel: closed by the broker.
	status, c, br, _ := rawConnect(t, p.addr, "allowed.test:"+ep)
	if status != 200 {
		t.Fatal(status)
	}
	defer c.Close()
	echoRoundTrip(t, c, br, "x")
	if !waitClosed(c, br, 10*time.Second) {
		t.Fatal("idle tunnel was not closed")
	}

	// One-way traffic (download only) keeps a tunnel open past IdleTimeout.
	status, c2, br2, _ := rawConnect(t, p.addr, "allowed.test:"+portOf(t, src.Addr().String()))
	if status != 200 {
		t.Fatal(status)
	}
	defer c2.Close()
	c2.SetReadDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
	got, err := io.ReadAll(br2)
	if err != nil || len(got) != 100 {
		t.Fatalf("download through tunnel: %d bytes, %v; want 100 (source sent %d)", len(got), err, <-sent)
	}
}

func TestServeConn(t *testing.T) {
	ep := portOf(t, echoServer(t))
	srv, err := NewServer(Config{Policy: mustPolicy(t, benchEntries, []string{"127.0.0.0/8"}), Resolver: testResolver{}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			srv.ServeConn(c)
		}
	}()
	if !srv.LastActivity().IsZero() {
		t.Error("LastActivity set before any connection")
	}
	status, c, br, _ := rawConnect(t, ln.Addr().String(), "allowed.test:"+ep)
	if status != 200 {
		t.Fatal(status)
	}
	echoRoundTrip(t, c, br, "hi")
	if time.Since(srv.LastActivity()) > time.Minute {
		t.Error("LastActivity not updated")
	}
	c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

func TestGracefulStopClosesTunnels(t *testing.T) {
	ep := portOf(t, echoServer(t))
	srv, err := NewServer(Config{Policy: mustPolicy(t, benchEntries, []string{"127.0.0.0/8"}), Resolver: testResolver{},
		ShutdownGrace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	status, c, br, _ := rawConnect(t, ln.Addr().String(), "allowed.test:"+ep)
	if status != 200 {
		t.Fatal(status)
	}
	defer c.Close()
	echoRoundTrip(t, c, br, "x")
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !waitClosed(c, br, 10*time.Second) {
		t.Error("tunnel still open after stop")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("listener still accepting")
	}
}

func TestNewServerRejectsNonLoopback(t *testing.T) {
	for _, l := range []string{"0.0.0.0:1", "192.0.2.1:80", "localhost:80", "127.0.0.1"} {
		if _, err := NewServer(Config{Listen: l}); err == nil {
			t.Errorf("NewServer(Listen %q) accepted", l)
		}
	}
	if _, err := NewServer(Config{Listen: "127.0.0.1:42000"}); err != nil {
		t.Error(err)
	}
}
