package egress

import (
	"bufio"
	"context"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkConnectSequential is the broker's CONNECT path as the proxy
// benchmark's setup test drives it (../shared/bench/proxy, "CONNECT
// setup"): one new connection per tunnel, CONNECT to an allowed name, the
// 200, a 1-byte echo through the tunnel, close. The server is a real one
// with its decision log on (a jsonl file, as `corral broker --log`); the
// resolver is a fake that maps *.test to 127.0.0.1, or the system resolver
// for "localhost" (/etc/hosts). Client, server and upstream share the
// process, so ns/op is the whole round trip: profile it to see the
// server's share,
//
//	go test -run '^$' -bench ConnectSequential -benchtime 3000x -cpuprofile /tmp/cpu.out ./core/egress
//	go tool pprof -top -focus 'egress.\(\*Server\)' core/egress.test /tmp/cpu.out
func BenchmarkConnectSequential(b *testing.B) {
	for _, bc := range []struct {
		name     string
		host     string
		resolver Resolver
	}{
		{"fake-resolver", "allowed.test", testResolver{}},
		{"system-resolver", "localhost", nil},
	} {
		b.Run(bc.name, func(b *testing.B) {
			up := listenUpstream(b)
			defer up.Close()
			go func() {
				for {
					c, err := up.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						io.Copy(c, c) //nolint:errcheck
					}()
				}
			}()
			port := up.Addr().(*net.TCPAddr).Port
			addr, stop := benchProxy(b, bc.resolver)
			defer stop()
			target := bc.host + ":" + strconv.Itoa(port)
			req := []byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
			want := "HTTP/1.1 200 Connection established\r\n\r\n"
			buf := make([]byte, len(want))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
					b.Fatalf("CONNECT: %q %v", buf, err)
				}
				if _, err := c.Write([]byte{'p'}); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf[:1]); err != nil || buf[0] != 'p' {
					b.Fatalf("echo: %q %v", buf[:1], err)
				}
				c.Close()
			}
		})
	}
}

// BenchmarkConnectDenied is the deny path: a new connection, CONNECT to a
// name the policy denies, the 403 read to its end, close. The decision log
// aggregates the repeats (one line per destination and interval), as in
// the proxy benchmark's deny test.
func BenchmarkConnectDenied(b *testing.B) {
	addr, stop := benchProxy(b, testResolver{})
	defer stop()
	req := []byte("CONNECT denied.test:443 HTTP/1.1\r\nHost: denied.test:443\r\n\r\n")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || line[:12] != "HTTP/1.1 403" {
			b.Fatalf("CONNECT denied: %q %v", line, err)
		}
		c.Close()
	}
}

// benchProxy serves a broker that allows *.test and localhost on any port
// (127.0.0.0/8 explicitly allowed) with its decision log in a temporary
// file, until stop.
func benchProxy(b *testing.B, r Resolver) (string, func()) {
	b.Helper()
	pol, err := ParsePolicy([]string{"allowed.test:*", "localhost:*"}, []string{"127.0.0.0/8"})
	if err != nil {
		b.Fatal(err)
	}
	dl, err := OpenLog(filepath.Join(b.TempDir(), "egress.jsonl"), "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(Config{Box: "bench", Policy: pol, Resolver: r, Log: dl, ShutdownGrace: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ctx, ln)
	}()
	return ln.Addr().String(), func() {
		cancel()
		<-done
		dl.Close()
	}
}
