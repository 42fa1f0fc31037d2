package broker

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/paths"
)

// The broker's hot path as the shared proxy benchmark drives it
// (../shared/bench/proxy: "CONNECT setup" and "Deny path"), through Run
// itself: a standalone broker with its decision log on (as `corral broker
// --log`), and a box broker, whose denials also reach the audit log. Client,
// broker and upstream share the process, so ns/op is the whole round trip;
// profile it to see the broker's share:
//
//	go test -run '^$' -bench 'Broker' -benchtime 3000x -cpuprofile /tmp/cpu.out ./core/broker
//	go tool pprof -top -focus 'egress|broker' core/broker.test /tmp/cpu.out

// BenchmarkBrokerConnect is one sequential tunnel: a new connection,
// CONNECT to an allowed name, the 200, a 1-byte echo through the tunnel,
// close.
func BenchmarkBrokerConnect(b *testing.B) {
	for _, mode := range []string{"standalone", "box"} {
		b.Run(mode, func(b *testing.B) {
			addr := benchBroker(b, mode)
			target := "api.example.test:" + echoUpstream(b)
			req := []byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
			want := "HTTP/1.1 200 Connection established\r\n\r\n"
			buf := make([]byte, len(want))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
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

// BenchmarkBrokerDenied is the deny path: a new connection, CONNECT to a
// name the allow-list does not have, the 403, close. In box mode every
// denial is also considered for the audit log (one record per host per
// auditWindow).
func BenchmarkBrokerDenied(b *testing.B) {
	for _, mode := range []string{"standalone", "box"} {
		b.Run(mode, func(b *testing.B) {
			addr := benchBroker(b, mode)
			req := []byte("CONNECT denied.example.test:443 HTTP/1.1\r\nHost: denied.example.test:443\r\n\r\n")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				line, err := bufio.NewReader(c).ReadString('\n')
				if err != nil || !strings.HasPrefix(line, "HTTP/1.1 403") {
					b.Fatalf("CONNECT denied: %q %v", line, err)
				}
				c.Close()
			}
		})
	}
}

// benchBroker runs a broker until the benchmark ends and returns its
// address. Standalone, it allows api.example.test on any port with
// 127.0.0.0/8 and logs to a file; a box broker takes the same entry from
// the box's trusted config.
func benchBroker(b *testing.B, mode string) string {
	b.Helper()
	o := Options{Listen: "127.0.0.1:0", Platform: linux, Resolver: brokertest.Resolver{}, Logger: discard()}
	switch mode {
	case "standalone":
		o.Layout = paths.Layout{Home: b.TempDir()}
		o.Allow, o.AllowRanges = []string{"api.example.test:*"}, []string{"127.0.0.0/8"}
		o.LogFile = filepath.Join(b.TempDir(), "egress.jsonl")
	case "box":
		l, name := newBox(b, "")
		if err := os.WriteFile(l.ProjectConfig(name), []byte(`egress = ["api.example.test:*"]`+"\n"), 0o600); err != nil {
			b.Fatal(err)
		}
		o.Layout, o.Box, o.ExtraRanges = l, name, []string{"127.0.0.0/8"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	o.Listening = func(a net.Addr) { addrc <- a.String() }
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case a := <-addrc:
		return a
	case err := <-done:
		b.Fatalf("broker exited: %v", err)
	case <-time.After(15 * time.Second):
		b.Fatal("broker did not listen within 15s")
	}
	return ""
}

// echoUpstream serves a TCP echo on loopback, outside the broker ports,
// until the benchmark ends, and returns its port.
func echoUpstream(b *testing.B) string {
	ln := brokertest.ListenOutsideBrokerPorts(b)
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c) //nolint:errcheck
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
