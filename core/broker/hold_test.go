package broker

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/broker/brokertest"
)

// connect sends CONNECT target through the broker at addr and returns the
// status, how long the answer took, and on 200 the tunnel. It does not call
// t.Fatal on network errors, so it can run off the test goroutine.
func connect(addr, target string) (int, time.Duration, net.Conn, *bufio.Reader, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, 0, nil, nil, err
	}
	c.SetDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
		c.Close()
		return 0, 0, nil, nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	took := time.Since(start)
	if err != nil {
		c.Close()
		return 0, took, nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return resp.StatusCode, took, nil, nil, nil
	}
	return resp.StatusCode, took, c, br, nil
}

// getThrough sends a GET over an open tunnel to the upstream httptest
// server and returns the response status.
func getThrough(t *testing.T, c net.Conn, br *bufio.Reader, host string) int {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A once-approval admits exactly one connection, then is gone from the
// approvals file.
func TestBoxBrokerOnceIsOneConnection(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "once.example.test:" + port
	if _, err := approval.Allow(l, name, "once.example.test:*", approval.ScopeOnce, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	// Wait until the broker has the approval: the first CONNECT it admits
	// uses it up.
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, _, c, br, err := connect(addr, target)
		if err != nil {
			t.Fatal(err)
		}
		if code == http.StatusOK {
			if got := getThrough(t, c, br, target); got != http.StatusOK {
				t.Fatalf("through the once tunnel: %d", got)
			}
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("once approval never applied: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range 5 {
		if code, _, c, _, err := connect(addr, target); err != nil || code != http.StatusForbidden {
			if c != nil {
				c.Close()
			}
			t.Fatalf("connection %d after the once: %d %v, want 403", i+2, code, err)
		}
	}
	if code, _ := brokertest.ProxyGet(t, addr, "http://"+target+"/"); code != http.StatusForbidden {
		t.Fatalf("plain request after the once: %d", code)
	}
	s, _ := approval.Open(l, name)
	if left, err := s.All(); err != nil || len(left) != 0 {
		t.Fatalf("approvals after the once: %+v %v", left, err)
	}
}

// hold_denied in the trusted layer: a denied CONNECT waits, and an approval
// given meanwhile (what `corral allow` writes) lets it proceed, no retry.
func TestBoxBrokerHoldProceedsOnAllow(t *testing.T) {
	l, name := newBox(t, "")
	if err := os.WriteFile(l.ProjectConfig(name), []byte("hold_denied = \"8s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "held.example.test:" + port
	type result struct {
		code int
		took time.Duration
		c    net.Conn
		br   *bufio.Reader
		err  error
	}
	res := make(chan result, 1)
	go func() {
		code, took, c, br, err := connect(addr, target)
		res <- result{code, took, c, br, err}
	}()
	time.Sleep(300 * time.Millisecond) // the CONNECT is held by now (or answered: checked below)
	if _, err := approval.Allow(l, name, "held.example.test:*", approval.ScopeAlways, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.code != http.StatusOK {
		t.Fatalf("held CONNECT: %d %v after %v, want 200", r.code, r.err, r.took)
	}
	defer r.c.Close()
	if r.took < 300*time.Millisecond || r.took >= 8*time.Second {
		t.Fatalf("held CONNECT answered after %v: want after the approval, before the hold ended", r.took)
	}
	t.Logf("held CONNECT proceeded %v after it was sent", r.took)
	if got := getThrough(t, r.c, r.br, target); got != http.StatusOK {
		t.Fatalf("through the held tunnel: %d", got)
	}
}

// Without an approval the held CONNECT is answered 403 when the hold ends.
func TestBoxBrokerHoldTimesOut(t *testing.T) {
	l, name := newBox(t, "")
	if err := os.WriteFile(l.ProjectConfig(name), []byte("hold_denied = \"1s\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	code, took, c, _, err := connect(addr, "held.example.test:"+port)
	if c != nil {
		c.Close()
	}
	if err != nil || code != http.StatusForbidden || took < time.Second {
		t.Fatalf("held CONNECT without approval: %d %v after %v, want 403 after 1s", code, err, took)
	}
}
