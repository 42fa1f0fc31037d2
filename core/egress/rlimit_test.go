//go:build linux

package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets the test binary run as a broker child: with
// CORRAL_EGRESS_TEST_CHILD set it lowers RLIMIT_NOFILE (soft and hard) to
// 1,024, serves a broker whose tunnel cap is derived from that limit until
// SIGTERM, and exits with 0 only if Serve returned.
func TestMain(m *testing.M) {
	if os.Getenv("CORRAL_EGRESS_TEST_CHILD") == "1" {
		os.Exit(brokerChild())
	}
	os.Exit(m.Run())
}

func brokerChild() int {
	lim := unix.Rlimit{Cur: 1024, Max: 1024}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 3
	}
	pol, err := ParsePolicy([]string{"allowed.test:*"}, []string{"127.0.0.0/8"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	srv, err := NewServer(Config{Box: "child", Policy: pol, Resolver: testResolver{}, ShutdownGrace: time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	srv.pipes.idleFor = 200 * time.Millisecond // the flood test waits for idle pipes to close
	ln, err := Listen(context.Background(), "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Printf("%s %d\n", ln.Addr(), srv.cfg.MaxTunnels)
	if err := srv.Serve(ctx, ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestTunnelsAtFileLimit: a broker at RLIMIT_NOFILE 1,024 takes 2,000
// tunnel requests. Every request is answered at once (200 up to the cap
// derived from the limit, 503 past it), a denial is still answered 403 with
// every slot taken, and with a request stuck upstream SIGTERM ends the
// broker within its grace period.
func TestTunnelsAtFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections")
	}
	addr, limit, cmd, exited := startBrokerChild(t)
	if limit != TunnelCap(1024) {
		t.Fatalf("child tunnel cap %d, want %d", limit, TunnelCap(1024))
	}
	echo := "allowed.test:" + portOf(t, echoServer(t))
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	ok, busy := 0, 0
	for i := range 2000 {
		start := time.Now()
		status, c, _, body := rawConnect(t, addr, echo)
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("tunnel %d answered after %v", i, d)
		}
		switch status {
		case 200:
			ok++
			open = append(open, c)
		case 503:
			busy++
			if !strings.Contains(body, "too many open tunnels") {
				t.Fatalf("503 body %q", body)
			}
		default:
			t.Fatalf("tunnel %d: status %d %q", i, status, body)
		}
	}
	if ok != limit || busy != 2000-limit {
		t.Fatalf("%d tunnels open, %d refused; want %d and %d", ok, busy, limit, 2000-limit)
	}
	// Every slot is taken: a denial is still answered.
	if status, _, _, _ := rawConnect(t, addr, "denied.example:443"); status != http.StatusForbidden {
		t.Fatalf("denial at the cap: status %d, want 403", status)
	}
	// A flood of connections that send nothing, more than the descriptors
	// left: the broker evicts the longest-waiting ones, so a denial is
	// still answered at once (not after the 10 s header timeout).
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 600 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	start := time.Now()
	if status, _, _, _ := rawConnect(t, addr, "denied.example:443"); status != http.StatusForbidden {
		t.Fatalf("denial after an idle flood: status %d, want 403", status)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("denial after an idle flood answered after %v", d)
	}
	// A request stuck upstream, then SIGTERM.
	up, _ := stuckUpstream(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST http://allowed.test:%s/ HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 10\r\n\r\n0123456789", portOf(t, up))
	time.Sleep(300 * time.Millisecond)
	start = time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("broker child after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("broker child still running 10 s after SIGTERM")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("SIGTERM took %v with a 1 s grace", d)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
	if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("stuck request's client after SIGTERM: %v", err)
	}
}

// startBrokerChild starts the test binary as a broker child (see
// TestMain) and returns its address, tunnel cap, process and the channel
// that receives its exit (put back by whoever takes it, for the cleanup).
func startBrokerChild(t *testing.T) (addr string, limit int, cmd *exec.Cmd, exited chan error) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CORRAL_EGRESS_TEST_CHILD=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // only if still running
		<-exited
	})
	_, err = fmt.Fscan(bufio.NewReader(out), &addr, &limit)
	go func() { exited <- cmd.Wait() }() // after the read: Wait closes the pipe
	if err != nil {
		t.Fatal(err)
	}
	return addr, limit, cmd, exited
}

// openFDs counts the descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestFloodAtFileLimit: 2,000 clients ask a broker at RLIMIT_NOFILE 1,024
// for a tunnel all at once and keep the ones they get open. Every client
// gets an answer, and the answer is 200 (up to the cap) or 503: never 502,
// never a connection closed without one. When they are gone, the broker's
// descriptors (sockets and splice pipes) are back to what it held before
// the flood within a bound.
func TestFloodAtFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 connections")
	}
	addr, limit, cmd, _ := startBrokerChild(t)
	pid := cmd.Process.Pid
	echo := "allowed.test:" + portOf(t, echoServer(t))
	base := openFDs(t, pid)

	const clients = 2000
	var (
		mu       sync.Mutex
		ok, busy int
		bad      []string
		answered sync.WaitGroup
		done     sync.WaitGroup
	)
	release := make(chan struct{})
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(bad) < 10 {
			bad = append(bad, fmt.Sprintf(format, args...))
		} else {
			bad[9] = fmt.Sprintf("… and more; last: "+format, args...)
		}
	}
	answered.Add(clients)
	done.Add(clients)
	for i := range clients {
		go func() {
			defer done.Done()
			once := sync.OnceFunc(answered.Done)
			defer once()
			c, err := net.DialTimeout("tcp", addr, 20*time.Second)
			if err != nil {
				fail("client %d: dial: %v", i, err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
			if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", echo, echo); err != nil {
				fail("client %d: writing CONNECT: %v", i, err)
				return
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil {
				fail("client %d: no answer: %v", i, err)
				return
			}
			switch resp.StatusCode {
			case http.StatusOK:
				if _, err := io.WriteString(c, "ping\n"); err != nil {
					fail("client %d: tunnel write: %v", i, err)
					return
				}
				if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
					fail("client %d: tunnel echo %q, %v", i, line, err)
					return
				}
				mu.Lock()
				ok++
				mu.Unlock()
				once()
				<-release // hold the tunnel until every client has its answer
			case http.StatusServiceUnavailable:
				mu.Lock()
				busy++
				mu.Unlock()
			default:
				fail("client %d: status %d", i, resp.StatusCode)
			}
		}()
	}
	answered.Wait()
	close(release)
	done.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	if ok == 0 || ok > limit || ok+busy != clients {
		t.Errorf("%d tunnels, %d answered 503, of %d clients (cap %d)", ok, busy, clients, limit)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := openFDs(t, pid)
		if n <= base {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker holds %d descriptors 15 s after the flood, %d before it", n, base)
		}
		time.Sleep(50 * time.Millisecond) // polling the count, with a deadline
	}
}
