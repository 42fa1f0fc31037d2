package broker

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/secret"
)

const testProxyPass = "corp-proxy-pass-51c9"

// connectProxy is an HTTP CONNECT proxy on 127.0.0.1 that wants
// alice:testProxyPass, records every request it sees, and tunnels only to
// loopback.
type connectProxy struct {
	addr string
	mu   sync.Mutex
	seen []string
}

func (p *connectProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &connectProxy{addr: ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(20 * time.Second))
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				user, pass, _ := (&http.Request{Header: http.Header{"Authorization": req.Header["Proxy-Authorization"]}}).BasicAuth()
				p.mu.Lock()
				p.seen = append(p.seen, req.Method+" "+req.RequestURI+" "+user)
				p.mu.Unlock()
				if req.Method != http.MethodConnect || user != "alice" || pass != testProxyPass {
					io.WriteString(c, "HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
					return
				}
				host, _, _ := net.SplitHostPort(req.RequestURI)
				if host != "127.0.0.1" {
					io.WriteString(c, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
					return
				}
				up, err := net.Dial("tcp", req.RequestURI)
				if err != nil {
					return
				}
				defer up.Close()
				io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
				go io.Copy(up, br)
				io.Copy(c, up)
			}()
		}
	}()
	return p
}

// runProxiedBroker runs a box's broker whose trusted layer is trusted,
// with the proxy password pass in its keychain (corp-proxy/alice), until
// the test ends. It returns the broker's address, the box's layout and
// name, and its operational log so far.
func runProxiedBroker(t *testing.T, trusted, pass string) (string, paths.Layout, string, func() string) {
	t.Helper()
	l, name := newBox(t, "")
	if err := os.MkdirAll(filepath.Dir(l.ProjectConfig(name)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	store := &secret.Memory{}
	if err := store.Set(context.Background(), "corp-proxy", "alice", pass); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", Secrets: store,
			ExtraRanges: []string{"127.0.0.0/8"}, Resolver: brokertest.Resolver{},
			Logger:    slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug})),
			Listening: func(a net.Addr) { addrc <- a.String() }})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("broker: %v", err)
		}
	})
	select {
	case addr := <-addrc:
		return addr, l, name, func() string {
			logMu.Lock()
			defer logMu.Unlock()
			return logs.String()
		}
	case err := <-done:
		t.Fatalf("broker exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("broker did not listen")
	}
	return "", l, name, nil
}

// egressLog waits until the box's egress log has n decision lines of
// kind, and returns it.
func egressLog(l paths.Layout, name, kind string, n int) string {
	var log string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(l.EgressLog(name))
		if log = string(b); strings.Count(log, `"kind":"`+kind+`"`) >= n {
			break
		}
	}
	return log
}

// TestBoxBrokerUpstreamProxy runs a box's broker whose trusted layer sets
// upstream_proxy with a keychain item: an allowed request leaves through
// the proxy, for the checked address, with the keychain's credentials; a
// denied one never reaches it, nor does the proxy's own address as a
// destination; the password is in no log line and not in the broker's
// argv.
func TestBoxBrokerUpstreamProxy(t *testing.T) {
	proxy := startConnectProxy(t)
	port := brokertest.Upstream(t)
	addr, l, name, logs := runProxiedBroker(t, `egress = ["api.example.test:*"]
upstream_proxy = { url = "http://`+proxy.addr+`", keychain = { service = "corp-proxy", account = "alice" } }
`, testProxyPass)

	if code, reason := brokertest.ProxyGet(t, addr, "http://api.example.test:"+port+"/"); code != http.StatusOK {
		t.Fatalf("allowed: %d %s", code, reason)
	}
	want := "CONNECT 127.0.0.1:" + port + " alice"
	if got := proxy.requests(); len(got) != 1 || got[0] != want {
		t.Fatalf("proxy saw %q, want [%q]", got, want)
	}
	if code, reason := brokertest.ProxyGet(t, addr, "http://other.example.test:"+port+"/"); code != http.StatusForbidden || reason != "host-not-allowed" {
		t.Errorf("denied: %d %s", code, reason)
	}
	_, pport, _ := net.SplitHostPort(proxy.addr)
	if code, reason := brokertest.ProxyGet(t, addr, "http://127.0.0.1:"+pport+"/"); code != http.StatusForbidden || reason != "self" {
		t.Errorf("the proxy itself as a destination (its range allowed): %d %s", code, reason)
	}
	if got := proxy.requests(); len(got) != 1 {
		t.Errorf("denied requests reached the proxy: %q", got)
	}
	log := egressLog(l, name, "http", 3)
	for where, text := range map[string]string{"egress log": log, "broker log": logs(),
		"broker argv": strings.Join(Argv(Args{Box: name, Listen: addr}), " ")} {
		if strings.Contains(text, testProxyPass) {
			t.Errorf("the proxy password is in the %s", where)
		}
	}
	if !strings.Contains(logs(), "upstream proxy") {
		t.Errorf("the broker's log does not say it uses the proxy:\n%s", logs())
	}
}

// TestBoxBrokerThroughSquid is the same with Debian's squid as the
// upstream proxy (skipped where squid is not installed): squid logs the
// checked address and the keychain's user for the allowed request and
// nothing for the denied one; a wrong password in the keychain is squid's
// 407, which the box gets as 502 upstream-proxy-refused, with the line in
// the egress log.
func TestBoxBrokerThroughSquid(t *testing.T) {
	squid := brokertest.StartSquid(t, "alice", testProxyPass, []string{"127.0.0.1/32"})
	port := brokertest.Upstream(t)
	trusted := `egress = ["api.example.test:*"]
upstream_proxy = { url = "http://` + squid.Addr + `", keychain = { service = "corp-proxy", account = "alice" } }
`
	addr, l, name, logs := runProxiedBroker(t, trusted, testProxyPass)
	if code, reason := brokertest.ProxyGet(t, addr, "http://api.example.test:"+port+"/"); code != http.StatusOK {
		t.Fatalf("allowed: %d %s\n%s", code, reason, squid.Logs())
	}
	if code, reason := brokertest.ProxyGet(t, addr, "http://other.example.test:"+port+"/"); code != http.StatusForbidden || reason != "host-not-allowed" {
		t.Errorf("denied: %d %s", code, reason)
	}
	want := "CONNECT 127.0.0.1:" + port + " alice 200"
	if got := squid.WaitRequests(1); len(got) != 1 || got[0] != want {
		t.Errorf("squid logged %q, want [%q]", got, want)
	}

	bad, _, _, badLogs := runProxiedBroker(t, trusted, "not-the-password")
	if code, reason := brokertest.ProxyGet(t, bad, "http://api.example.test:"+port+"/"); code != http.StatusBadGateway || reason != "upstream-proxy-refused" {
		t.Errorf("wrong password: %d %s, want 502 upstream-proxy-refused", code, reason)
	}
	if got := squid.WaitRequests(2); len(got) != 2 || !strings.HasPrefix(got[1], "CONNECT 127.0.0.1:"+port+" ") || !strings.HasSuffix(got[1], " 407") {
		t.Errorf("squid logged %q, want a 407 second", got)
	}
	for where, text := range map[string]string{"egress log": egressLog(l, name, "http", 2), "broker log": logs() + badLogs()} {
		if strings.Contains(text, testProxyPass) {
			t.Errorf("the proxy password is in the %s", where)
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
