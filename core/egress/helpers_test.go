package egress

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testResolver maps every *.test name to 127.0.0.1, except
// unresolvable.test, and fails for everything else: tests never reach
// anything but loopback.
type testResolver struct{}

func (testResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if strings.HasSuffix(host, ".test") && host != "unresolvable.test" {
		return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// memLog records decisions.
type memLog struct {
	mu sync.Mutex
	ds []Decision
}

func (m *memLog) LogDecision(d Decision) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ds = append(m.ds, d)
}

func (m *memLog) last() Decision {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ds) == 0 {
		return Decision{}
	}
	return m.ds[len(m.ds)-1]
}

type testProxy struct {
	srv  *Server
	addr string
	log  *memLog
	tok  string // a credential route token (startCredProxy)
}

// startProxy serves a broker on a 127.0.0.1 listener until the test ends.
func startProxy(t *testing.T, entries, ranges []string, mod func(*Config)) *testProxy {
	t.Helper()
	ml := &memLog{}
	cfg := Config{Box: "box1", Policy: mustPolicy(t, entries, ranges), Resolver: testResolver{}, Log: ml,
		ShutdownGrace: time.Second}
	if mod != nil {
		mod(&cfg)
	}
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after cancel")
		}
	})
	return &testProxy{srv: srv, addr: ln.Addr().String(), log: ml}
}

// listenUpstream listens on 127.0.0.1 on a port outside the broker port
// range: a box never reaches a broker port on the host, and the kernel's
// ephemeral ports include that range.
func listenUpstream(t testing.TB) net.Listener {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if !IsBrokerPort(ln.Addr().(*net.TCPAddr).Port) {
			return ln
		}
		defer ln.Close() // keep it until a port outside is found
	}
}

// newUpstream is httptest.NewServer (or NewTLSServer) on a port outside
// the broker port range.
func newUpstream(t testing.TB, secure bool, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = listenUpstream(t)
	if secure {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	return srv
}

// serveConns accepts on a test upstream listener until the test ends and
// runs handle for each connection (closed after handle returns).
func serveConns(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln := listenUpstream(t)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// echoServer accepts on 127.0.0.1 and echoes until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	return serveConns(t, func(c net.Conn) { io.Copy(c, c) }) //nolint:errcheck
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rawConnect sends CONNECT target and returns the status and the open
// connection (positioned after the response head) plus the body of a non-200
// response.
func rawConnect(t *testing.T, proxy, target string) (int, net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: reading response: %v", target, err)
	}
	if resp.StatusCode == http.StatusOK {
		c.SetDeadline(time.Time{}) //nolint:errcheck
		return resp.StatusCode, c, br, ""
	}
	b, _ := io.ReadAll(resp.Body)
	c.Close()
	return resp.StatusCode, nil, nil, string(b)
}

// echoRoundTrip writes msg and expects it back.
func echoRoundTrip(t *testing.T, c net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(br, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
	c.SetDeadline(time.Time{}) //nolint:errcheck
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitClosed reports whether the peer closed c within d.
func waitClosed(c net.Conn, r io.Reader, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d)) //nolint:errcheck
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}
