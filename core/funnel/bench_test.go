package funnel

import (
	"io"
	"net"
	"os"
	"sync"
	"testing"

	"github.com/corral-dev/corral/core/guestconn"
)

// The benchmarks compare the two ways a guestfwd command can get a guest
// connection to the broker, on loopback with socketpairs standing in for
// qemu: passing the socket (SendFD, what guest-conn does) and copying it to
// the broker's TCP port (a relay such as the lab's stdio2tcp). Both run
// in-process: the fork+exec of the command qemu pays per connection (about
// 1-10 ms) is the same for both and is not measured.
//
//	go test -run '^$' -bench . -benchtime 2s ./core/funnel

// broker accepts connections from ln and answers each: it echoes a
// one-byte ping, then reads everything the guest sends until EOF and
// reports the byte count on done.
func broker(b *testing.B, ln net.Listener, sink chan<- int64) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				var p [1]byte
				if _, err := io.ReadFull(c, p[:]); err != nil {
					return
				}
				if p[0] == 'p' {
					c.Write(p[:])
					return
				}
				n, _ := io.Copy(io.Discard, c)
				sink <- n + 1
			}()
		}
	}()
}

// relay is the copying forwarder: it connects to addr and copies both ways,
// half-closing each direction at EOF.
func relay(cmdEnd *os.File, addr string) error {
	up, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	local, err := net.FileConn(cmdEnd)
	cmdEnd.Close()
	if err != nil {
		up.Close()
		return err
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		io.Copy(up, local)
		up.(*net.TCPConn).CloseWrite()
	}()
	go func() {
		defer wg.Done()
		io.Copy(local, up)
		local.(*net.UnixConn).CloseWrite()
	}()
	go func() { wg.Wait(); up.Close(); local.Close() }()
	return nil
}

type forwarder func(cmdEnd *os.File) error

func setupFDPass(b *testing.B, sink chan int64) forwarder {
	ln, path := listen(b)
	broker(b, ln, sink)
	return func(cmdEnd *os.File) error {
		defer cmdEnd.Close()
		return guestconn.SendFD(path, int(cmdEnd.Fd()))
	}
}

func setupCopy(b *testing.B, sink chan int64) forwarder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	broker(b, ln, sink)
	addr := ln.Addr().String()
	return func(cmdEnd *os.File) error { return relay(cmdEnd, addr) }
}

// benchConnect measures new connections: forward, one round trip, close.
func benchConnect(b *testing.B, setup func(*testing.B, chan int64) forwarder) {
	fwd := setup(b, make(chan int64, 1))
	var p [1]byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		guest, cmdEnd := guestPair(b)
		if err := fwd(cmdEnd); err != nil {
			b.Fatal(err)
		}
		if _, err := guest.Write([]byte{'p'}); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(guest, p[:]); err != nil {
			b.Fatal(err)
		}
		guest.Close()
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "conn/s")
}

// benchThroughput measures one tunnel carrying b.N × 1 MiB from the guest
// to the broker.
func benchThroughput(b *testing.B, setup func(*testing.B, chan int64) forwarder) {
	sink := make(chan int64, 1)
	fwd := setup(b, sink)
	guest, cmdEnd := guestPair(b)
	if err := fwd(cmdEnd); err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	chunk[0] = 'd'
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for range b.N {
		if _, err := guest.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	guest.(*net.UnixConn).CloseWrite()
	if n := <-sink; n != int64(b.N)*int64(len(chunk)) {
		b.Fatalf("broker got %d bytes, want %d", n, int64(b.N)*int64(len(chunk)))
	}
}

func BenchmarkConnectFDPass(b *testing.B)    { benchConnect(b, setupFDPass) }
func BenchmarkConnectCopy(b *testing.B)      { benchConnect(b, setupCopy) }
func BenchmarkThroughputFDPass(b *testing.B) { benchThroughput(b, setupFDPass) }
func BenchmarkThroughputCopy(b *testing.B)   { benchThroughput(b, setupCopy) }
