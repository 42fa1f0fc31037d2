package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connectResult is what a CONNECT sent from a goroutine got.
type connectResult struct {
	status int
	conn   net.Conn
	br     *bufio.Reader
	err    error
	took   time.Duration
}

// connectAsync sends CONNECT target and reports the answer on the channel.
// It never calls t.Fatal: it runs off the test goroutine.
func connectAsync(proxy, target string) <-chan connectResult {
	out := make(chan connectResult, 1)
	go func() {
		start := time.Now()
		c, err := net.DialTimeout("tcp", proxy, 5*time.Second)
		if err != nil {
			out <- connectResult{err: err}
			return
		}
		c.SetDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
		if _, err := io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n"); err != nil {
			c.Close()
			out <- connectResult{err: err}
			return
		}
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil {
			c.Close()
			out <- connectResult{err: err, took: time.Since(start)}
			return
		}
		r := connectResult{status: resp.StatusCode, took: time.Since(start)}
		if resp.StatusCode == http.StatusOK {
			c.SetDeadline(time.Time{}) //nolint:errcheck
			r.conn, r.br = c, br
		} else {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck
			c.Close()
		}
		out <- r
	}()
	return out
}

func TestHeldConnectProceedsWhenAllowed(t *testing.T) {
	echo := echoServer(t)
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) { c.Hold = 5 * time.Second })
	target := "held.test:" + portOf(t, echo)
	res := connectAsync(p.addr, target)
	eventually(t, 5*time.Second, "the CONNECT to be held", func() bool { return p.srv.Held() == 1 })
	// The denial that starts the hold is logged, for the app to ask about.
	if d := p.log.last(); d.Allowed || d.Reason != ReasonHostNotAllowed {
		t.Fatalf("hold began with decision %+v", d)
	}
	p.srv.SetPolicy(mustPolicy(t, []string{"held.test:*"}, []string{"127.0.0.0/8"}))
	r := <-res
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("held CONNECT after the approval: %d %v", r.status, r.err)
	}
	defer r.conn.Close()
	if r.took >= 5*time.Second {
		t.Fatalf("held CONNECT answered after %v: the hold ran out", r.took)
	}
	echoRoundTrip(t, r.conn, r.br, "no retry needed\n")
	if d := p.log.last(); !d.Allowed || d.Held <= 0 || d.Held >= 5*time.Second {
		t.Fatalf("last decision %+v, want the admission marked held", d)
	}
	if p.srv.Held() != 0 {
		t.Fatalf("%d still held", p.srv.Held())
	}
}

func TestHeldConnectTimesOutWith403(t *testing.T) {
	echo := echoServer(t)
	const hold = 600 * time.Millisecond
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) { c.Hold = hold })
	// A change that does not allow it (another host) does not end the hold.
	go func() {
		time.Sleep(100 * time.Millisecond)
		p.srv.SetPolicy(mustPolicy(t, []string{"other.test:*"}, []string{"127.0.0.0/8"}))
	}()
	r := <-connectAsync(p.addr, "held.test:"+portOf(t, echo))
	if r.err != nil || r.status != http.StatusForbidden {
		t.Fatalf("held CONNECT without approval: %d %v, want 403", r.status, r.err)
	}
	if r.took < hold {
		t.Fatalf("answered after %v, before the hold of %v ended", r.took, hold)
	}
	// Two lines: the denial that began the hold (instant), then its
	// outcome, marked with the wait.
	p.log.mu.Lock()
	ds := append([]Decision(nil), p.log.ds...)
	p.log.mu.Unlock()
	if len(ds) != 2 || ds[0].Allowed || ds[0].Held != 0 || ds[1].Allowed || ds[1].Reason != ReasonHostNotAllowed || ds[1].Held < hold {
		t.Fatalf("decisions %+v, want the hold's start and its held denial", ds)
	}
}

func TestHoldOnlyForApprovableDenials(t *testing.T) {
	p := startProxy(t, nil, nil, func(c *Config) { c.Hold = 5 * time.Second })
	// A private address needs a range, which no approval gives: no hold.
	r := <-connectAsync(p.addr, "127.0.0.1:443")
	if r.err != nil || r.status != http.StatusForbidden || r.took > 2*time.Second {
		t.Fatalf("IP-literal CONNECT: %d %v after %v, want 403 at once", r.status, r.err, r.took)
	}
	if d := p.log.last(); d.Allowed || d.Held != 0 {
		t.Fatalf("instant denial logged as %+v, want no hold", d)
	}
}

func TestHoldCap(t *testing.T) {
	echo := echoServer(t)
	const maxHeld = 3
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) { c.Hold = 10 * time.Second; c.MaxHeld = maxHeld })
	target := "held.test:" + portOf(t, echo)
	var held []<-chan connectResult
	for range maxHeld {
		held = append(held, connectAsync(p.addr, target))
	}
	eventually(t, 5*time.Second, "the CONNECTs to be held", func() bool { return p.srv.Held() == maxHeld })
	// Past the cap: 403 at once.
	r := <-connectAsync(p.addr, target)
	if r.err != nil || r.status != http.StatusForbidden || r.took > 2*time.Second {
		t.Fatalf("CONNECT past the cap: %d %v after %v, want 403 at once", r.status, r.err, r.took)
	}
	if p.srv.Held() != maxHeld {
		t.Fatalf("%d held, want %d", p.srv.Held(), maxHeld)
	}
	// The held ones still proceed when allowed.
	p.srv.SetPolicy(mustPolicy(t, []string{"held.test:*"}, []string{"127.0.0.0/8"}))
	for _, ch := range held {
		r := <-ch
		if r.err != nil || r.status != http.StatusOK {
			t.Fatalf("held CONNECT: %d %v", r.status, r.err)
		}
		r.conn.Close()
	}
}

func TestHeldRequestsAnsweredAtShutdown(t *testing.T) {
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) { c.Hold = time.Minute })
	res := connectAsync(p.addr, "held.test:443")
	eventually(t, 5*time.Second, "the CONNECT to be held", func() bool { return p.srv.Held() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	go p.srv.Shutdown(ctx) //nolint:errcheck
	r := <-res
	if r.err != nil || r.status != http.StatusForbidden || time.Since(start) > 2*time.Second {
		t.Fatalf("held CONNECT at shutdown: %d %v after %v", r.status, r.err, time.Since(start))
	}
}

func TestOnceRuleAdmitsOneConnection(t *testing.T) {
	echo := echoServer(t)
	var left atomic.Int32
	left.Store(1)
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) {
		c.ConsumeOnce = func(entry string) bool { return entry == "once.test:*" && left.Add(-1) >= 0 }
	})
	p.srv.SetOnce([]OnceRule{{Entry: "once.test:*", Policy: mustPolicy(t, []string{"once.test:*"}, []string{"127.0.0.0/8"})}})
	target := "once.test:" + portOf(t, echo)
	var wg sync.WaitGroup
	var ok, denied atomic.Int32
	for range 6 {
		wg.Go(func() {
			r := <-connectAsync(p.addr, target)
			switch {
			case r.err != nil:
				t.Error(r.err)
			case r.status == http.StatusOK:
				ok.Add(1)
				r.conn.Close()
			case r.status == http.StatusForbidden:
				denied.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || denied.Load() != 5 {
		t.Fatalf("%d admitted, %d denied; want 1 and 5", ok.Load(), denied.Load())
	}
}

func TestHeldHTTPRequestProceedsWhenAllowed(t *testing.T) {
	up := newUpstream(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })) //nolint:errcheck
	p := startProxy(t, nil, []string{"127.0.0.0/8"}, func(c *Config) { c.Hold = 5 * time.Second })
	target := "http://held.test:" + portOf(t, up.Listener.Addr().String()) + "/"
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr}), DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 15 * time.Second}).Get(target)
		if err != nil {
			res <- result{err: err}
			return
		}
		resp.Body.Close()
		res <- result{code: resp.StatusCode}
	}()
	eventually(t, 5*time.Second, "the request to be held", func() bool { return p.srv.Held() == 1 })
	p.srv.SetPolicy(mustPolicy(t, []string{"held.test:*"}, []string{"127.0.0.0/8"}))
	if r := <-res; r.err != nil || r.code != http.StatusOK {
		t.Fatalf("held request: %d %v", r.code, r.err)
	}
}
