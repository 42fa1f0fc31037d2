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

// TestBoxBrokerUpstreamProxy runs a box's broker whose trusted layer sets
// upstream_proxy with a keychain item: an allowed request leaves through
// the proxy, for the checked address, with the keychain's credentials; a
// denied one never reaches it; the password is in no log line, no answer
// to the box and not in the broker's argv.
func TestBoxBrokerUpstreamProxy(t *testing.T) {
	proxy := startConnectProxy(t)
	port := brokertest.Upstream(t)
	l, name := newBox(t, "")
	trusted := `egress = ["api.example.test:*"]
upstream_proxy = { url = "http://` + proxy.addr + `", keychain = { service = "corp-proxy", account = "alice" } }
`
	if err := os.MkdirAll(filepath.Dir(l.ProjectConfig(name)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(name), []byte(trusted), 0o600); err != nil {
		t.Fatal(err)
	}
	store := &secret.Memory{}
	if err := store.Set(context.Background(), "corp-proxy", "alice", testProxyPass); err != nil {
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
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("broker: %v", err)
		}
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("broker exited: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("broker did not listen")
	}

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

	var egressLog string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(l.EgressLog(name))
		if egressLog = string(b); strings.Count(egressLog, `"kind":"http"`) >= 3 {
			break
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	for where, text := range map[string]string{"egress log": egressLog, "broker log": logs.String(),
		"broker argv": strings.Join(Argv(Args{Box: name, Listen: addr}), " ")} {
		if strings.Contains(text, testProxyPass) {
			t.Errorf("the proxy password is in the %s", where)
		}
	}
	if !strings.Contains(logs.String(), "upstream proxy") {
		t.Errorf("the broker's log does not say it uses the proxy:\n%s", logs.String())
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
