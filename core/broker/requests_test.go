package broker

import (
	"bufio"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/egress"
)

// fileRequest posts a request to the broker at addr as the box does
// (guest/corral-request.sh): origin-form, Host naming the broker as the
// box reaches it (newBox's BrokerPort). It returns the status and body.
func fileRequest(t *testing.T, addr string, form url.Values) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	body := form.Encode()
	if _, err := io.WriteString(c, "POST "+egress.RequestPath+" HTTP/1.1\r\nHost: 127.0.0.1:42001\r\n"+
		"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func askFor(host, why string) url.Values {
	return url.Values{"what": {"egress"}, "target": {host}, "why": {why}, "exe": {"node"}, "pid": {"4242"},
		"chain": {"npm < bash < sshd"}, "session": {"tests"}}
}

type held struct {
	code int
	took time.Duration
	c    net.Conn
	br   *bufio.Reader
	err  error
}

// holdConnect starts a CONNECT in the background.
func holdConnect(addr, target string) <-chan held {
	res := make(chan held, 1)
	go func() {
		code, took, c, br, err := connect(addr, target)
		res <- held{code, took, c, br, err}
	}()
	return res
}

// A request the box files is recorded with its reason and process, and a
// CONNECT to the requested host is held (hold_denied is off) until the
// user's Allow lets it through: no retry.
func TestBoxRequestAllowReleasesHeld(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "asked.example.test:" + port
	if code, body := fileRequest(t, addr, askFor(target, "npm install needs\x1b[31m the registry\n")); code != http.StatusAccepted {
		t.Fatalf("filing: %d %q", code, body)
	}
	res := holdConnect(addr, target)
	time.Sleep(400 * time.Millisecond)
	select {
	case r := <-res:
		t.Fatalf("CONNECT to a requested host answered before the answer: %d %v", r.code, r.err)
	default:
	}
	s, _ := approval.Open(l, name)
	entries, err := egress.ReadLog(l.EgressLog(name), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.Pending(entries, time.Now())
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	p := pending[0]
	if p.Request != target || p.Why != "npm install needs[31m the registry" || p.Who == nil || p.Who.Exe != "node" || p.Who.PID != 4242 || p.Who.Session != "tests" {
		t.Fatalf("pending request: %+v who %+v", p, p.Who)
	}
	if _, err := approval.Allow(l, name, target, approval.ScopeOnce, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	r := <-res
	if r.err != nil || r.code != http.StatusOK {
		t.Fatalf("held CONNECT: %d %v after %v, want 200", r.code, r.err, r.took)
	}
	defer r.c.Close()
	if got := getThrough(t, r.c, r.br, target); got != http.StatusOK {
		t.Fatalf("through the held tunnel: %d", got)
	}
	// Answered: no longer pending, and the next connection is not held.
	entries, _ = egress.ReadLog(l.EgressLog(name), time.Time{})
	if pending, _ := s.Pending(entries, time.Now()); len(pending) != 0 {
		t.Fatalf("pending after Allow: %+v", pending)
	}
	code, took, c, _, _ := connect(addr, target)
	if c != nil {
		c.Close()
	}
	if code != http.StatusForbidden || took > 2*time.Second {
		t.Fatalf("after the once was used: %d after %v, want 403 at once", code, took)
	}
}

// Deny refuses the held connection at once, and the request is answered.
func TestBoxRequestDenyRefusesHeld(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "asked.example.test:" + port
	if code, body := fileRequest(t, addr, askFor(target, "tests")); code != http.StatusAccepted {
		t.Fatalf("filing: %d %q", code, body)
	}
	res := holdConnect(addr, target)
	time.Sleep(400 * time.Millisecond)
	if _, err := approval.Deny(l, name, target, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-res:
		if r.c != nil {
			r.c.Close()
		}
		if r.err != nil || r.code != http.StatusForbidden {
			t.Fatalf("held CONNECT after Deny: %d %v, want 403", r.code, r.err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("held CONNECT not refused within 15s of Deny")
	}
	s, _ := approval.Open(l, name)
	entries, _ := egress.ReadLog(l.EgressLog(name), time.Time{})
	if pending, _ := s.Pending(entries, time.Now()); len(pending) != 0 {
		t.Fatalf("pending after Deny: %+v", pending)
	}
}

// With no answer the held connection is refused when the hold ends.
func TestBoxRequestHoldTimesOut(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"},
		RequestHold: time.Second})
	target := "asked.example.test:" + port
	if code, body := fileRequest(t, addr, askFor(target, "tests")); code != http.StatusAccepted {
		t.Fatalf("filing: %d %q", code, body)
	}
	code, took, c, _, err := connect(addr, target)
	if c != nil {
		c.Close()
	}
	if err != nil || code != http.StatusForbidden || took < time.Second {
		t.Fatalf("held CONNECT without an answer: %d %v after %v, want 403 after 1s", code, err, took)
	}
	// Another host is not held.
	code, took, c, _, _ = connect(addr, "other.example.test:"+port)
	if c != nil {
		c.Close()
	}
	if code != http.StatusForbidden || took > 900*time.Millisecond {
		t.Fatalf("CONNECT to a host nobody asked for: %d after %v, want 403 at once", code, took)
	}
}

// The channel refuses bad requests, a foreign Host, and a burst past the
// bucket, and never changes the policy.
func TestBoxRequestChannelRefuses(t *testing.T) {
	l, name := newBox(t, "")
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0"})
	for _, f := range []url.Values{
		{"what": {"egress"}, "target": {"*.example.test"}, "why": {"x"}},
		{"what": {"egress"}, "target": {"10.0.0.0/8"}, "why": {"x"}},
		{"what": {"egress"}, "target": {"a.example.test"}, "why": {"\x00\x1b"}},
		{"what": {"port"}, "target": {"0"}, "why": {"x"}},
		{"what": {"grant"}, "target": {"a.example.test"}, "why": {"x"}},
		{"what": {"egress"}, "target": {"a.example.test"}, "why": {"x"}, "scope": {"always"}},
	} {
		if code, body := fileRequest(t, addr, f); code != http.StatusBadRequest {
			t.Errorf("%v: %d %q, want 400", f, code, body)
		}
	}
	accepted, limited := 0, 0
	for i := range 8 {
		code, _ := fileRequest(t, addr, askFor("h"+strconv.Itoa(i)+".example.test", "burst"))
		switch code {
		case http.StatusAccepted:
			accepted++
		case http.StatusTooManyRequests:
			limited++
		}
	}
	if accepted != 5 || limited != 3 {
		t.Fatalf("burst of 8: %d accepted, %d limited; want 5 and 3", accepted, limited)
	}
	s, _ := approval.Open(l, name)
	if all, err := s.All(); err != nil || len(all) != 0 {
		t.Fatalf("requests granted something: %+v %v", all, err)
	}
}

// A client that names its session in its proxy credentials (the box's
// proxy settings in a corral session) gets it on its decision lines.
func TestDecisionNamesSession(t *testing.T) {
	l, name := newBox(t, "")
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0"})
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	auth := base64.StdEncoding.EncodeToString([]byte("session-ab12cd:x"))
	if _, err := io.WriteString(c, "CONNECT denied.example.test:443 HTTP/1.1\r\nHost: denied.example.test:443\r\nProxy-Authorization: Basic "+auth+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, _ := egress.ReadLog(l.EgressLog(name), time.Time{})
		for _, e := range entries {
			if e.IsDecision() && e.Host == "denied.example.test" {
				if e.Who == nil || e.Who.Session != "ab12cd" {
					t.Fatalf("decision line: %+v who %+v", e, e.Who)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no decision line")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A plain HTTP request (what the box's curl sends for http://) to a
// requested host is held and released the same way.
func TestBoxRequestHoldsPlainHTTP(t *testing.T) {
	l, name := newBox(t, "")
	port := brokertest.Upstream(t)
	addr := start(t, Options{Layout: l, Platform: linux, Box: name, Listen: "127.0.0.1:0", ExtraRanges: []string{"127.0.0.0/8"}})
	target := "asked.example.test:" + port
	if code, body := fileRequest(t, addr, askFor(target, "tests")); code != http.StatusAccepted {
		t.Fatalf("filing: %d %q", code, body)
	}
	type got struct {
		code int
		err  error
	}
	res := make(chan got, 1)
	go func() {
		tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}), DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Get("http://" + target + "/")
		if err != nil {
			res <- got{0, err}
			return
		}
		resp.Body.Close()
		res <- got{resp.StatusCode, nil}
	}()
	time.Sleep(400 * time.Millisecond)
	select {
	case r := <-res:
		t.Fatalf("held GET answered before the answer: %+v", r)
	default:
	}
	if _, err := approval.Allow(l, name, target, approval.ScopeSession, audit.ActorApp); err != nil {
		t.Fatal(err)
	}
	if r := <-res; r.err != nil || r.code != http.StatusOK {
		t.Fatalf("held GET after Allow: %+v", r)
	}
}
