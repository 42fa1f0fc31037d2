package egress

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// earlyAnswerUpstream answers every request at once, before reading its
// body, then closes: the case where the broker's transport is still sending
// the request body when the response is already in.
func earlyAnswerUpstream(t *testing.T) string {
	t.Helper()
	return serveConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope") //nolint:errcheck
		// Read a little of the body, slowly, so the transport is
		// mid-body when the broker has its answer.
		buf := make([]byte, 1024)
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)) //nolint:errcheck
		br.Read(buf)                                              //nolint:errcheck
	})
}

// TestEarlyAnswerPOST is the regression test for the pooled-reader crash:
// a POST with a large body to an upstream that answers before reading it.
// The broker returned its connection's pooled reader to the pool while the
// transport still read the body through it (nil dereference, or one
// connection's bytes handed to another's upstream). Run it with -race.
func TestEarlyAnswerPOST(t *testing.T) {
	up := earlyAnswerUpstream(t)
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)
	body := strings.Repeat("x", 4<<20)
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", p.addr, 5*time.Second)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second)) //nolint:errcheck
			go func() {
				fmt.Fprintf(c, "POST http://allowed.test:%s/up/%d HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: %d\r\n\r\n", portOf(t, up), i, len(body))
				io.WriteString(c, body) //nolint:errcheck
			}()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // the broker may close a connection whose body it did not take
			}
			resp.Body.Close()
			if resp.StatusCode != 413 && resp.StatusCode != 502 {
				t.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	wg.Wait()
	// The broker is still alive and serves the next request.
	status, _, _, _ := rawConnect(t, p.addr, "denied.example:443")
	if status != http.StatusForbidden {
		t.Fatalf("broker after early answers: CONNECT status %d, want 403", status)
	}
}

// stuckUpstream accepts connections, reads what comes and never answers.
func stuckUpstream(t *testing.T) (addr string, gone chan struct{}) {
	t.Helper()
	ln := listenUpstream(t)
	t.Cleanup(func() { ln.Close() })
	gone = make(chan struct{}, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(io.Discard, c) //nolint:errcheck
				gone <- struct{}{}     // the broker closed its side
			}()
		}
	}()
	return ln.Addr().String(), gone
}

func TestResponseHeaderTimeout(t *testing.T) {
	up, _ := stuckUpstream(t)
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, func(c *Config) { c.ResponseHeaderTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	fmt.Fprintf(c, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", portOf(t, up))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
}

// A client that leaves while its request waits upstream cancels it: the
// broker closes its upstream connection instead of holding it forever.
func TestClientGoneCancelsRequest(t *testing.T) {
	up, gone := stuckUpstream(t)
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", portOf(t, up))
	time.Sleep(200 * time.Millisecond) // let the request reach upstream
	c.Close()
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("upstream connection still open 5 s after the client left")
	}
}

// Shutdown with a request stuck upstream and an open tunnel returns within
// its grace period (plus slack) and closes both.
func TestShutdownStuckUpstream(t *testing.T) {
	up, _ := stuckUpstream(t)
	srv, err := NewServer(Config{Box: "b", Policy: mustPolicy(t, benchEntries, []string{"127.0.0.0/8"}),
		Resolver: testResolver{}, ShutdownGrace: 500 * time.Millisecond})
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
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", portOf(t, up))
	status, tc, _, _ := rawConnect(t, ln.Addr().String(), "allowed.test:"+portOf(t, up))
	if status != 200 {
		t.Fatalf("CONNECT status %d", status)
	}
	defer tc.Close()
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Serve still running 5 s after cancel with a stuck upstream")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v with a 500ms grace", d)
	}
	if !waitClosed(tc, tc, 2*time.Second) {
		t.Fatal("tunnel still open after shutdown")
	}
}

func TestTunnelCapFromLimit(t *testing.T) {
	for _, tc := range []struct {
		soft uint64
		want int
	}{{0, DefaultMaxTunnels}, {1024, 336}, {256, 48}, {100, 8}, {1 << 40, (1<<20 - fdReserve - 2*maxPipes) / 2}} {
		if got := TunnelCap(tc.soft); got != tc.want {
			t.Errorf("TunnelCap(%d) = %d, want %d", tc.soft, got, tc.want)
		}
	}
}

// TestTunnelBulk moves 24 MiB through a tunnel to an echo server and
// back (several splice chunks and pump rounds each way, past tunnelChunk),
// byte for byte.
func TestTunnelBulk(t *testing.T) {
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, nil)
	status, c, br, _ := rawConnect(t, p.addr, "allowed.test:"+portOf(t, echoServer(t)))
	if status != 200 {
		t.Fatalf("CONNECT status %d", status)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second)) //nolint:errcheck
	want := make([]byte, 24<<20)
	for i := range want {
		want[i] = byte(i * 7 >> 3)
	}
	go func() {
		c.Write(want)                 //nolint:errcheck
		c.(*net.TCPConn).CloseWrite() //nolint:errcheck
	}()
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("echoed %d bytes, want %d, equal %v", len(got), len(want), bytes.Equal(got, want))
	}
}
