package funnel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/guestconn"
)

// guestPair stands in for qemu's guestfwd: the guest end and the end qemu
// gives the guest-conn command.
func guestPair(t testing.TB) (guest net.Conn, cmdEnd *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	gf := os.NewFile(uintptr(fds[0]), "guest")
	guest, err = net.FileConn(gf)
	gf.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guest.Close() })
	return guest, os.NewFile(uintptr(fds[1]), "guest-conn stdin")
}

func listen(t testing.TB) (*Listener, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "box.sock")
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close(); ln.Wait() })
	return ln, path
}

func accept(t *testing.T, ln net.Listener) net.Conn {
	t.Helper()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() { c, err := ln.Accept(); ch <- res{c, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.c
	case <-time.After(10 * time.Second):
		t.Fatal("no connection accepted within 10s")
	}
	return nil
}

func TestPassedConnCarriesBothWays(t *testing.T) {
	ln, path := listen(t)
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", fi.Mode(), err)
	}
	guest, cmdEnd := guestPair(t)
	if !guestconn.IsSocket(int(cmdEnd.Fd())) {
		t.Fatal("guestconn.IsSocket(socketpair end) = false")
	}
	if err := guestconn.SendFD(path, int(cmdEnd.Fd())); err != nil {
		t.Fatal(err)
	}
	cmdEnd.Close() // guest-conn exits: the broker holds the only other copy
	c := accept(t, ln)
	defer c.Close()

	if _, err := guest.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("broker read %q, %v", line, err)
	}
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	// Half-close from the broker side reaches the guest as EOF even though
	// the guest-conn process held the same socket on three fds.
	if err := c.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = guest.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := io.ReadAll(guest)
	if err != nil || string(b) != "pong" {
		t.Fatalf("guest read %q, %v", b, err)
	}
}

func TestListenReplacesStaleSocketOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "box.sock")
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln, err := Listen(path, nil)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	if _, err := Listen(path, nil); err == nil {
		t.Error("a second Listen took over a live socket")
	}
	ln.Close()

	file := filepath.Join(dir, "file.sock")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(file, nil); err == nil {
		t.Error("Listen replaced a regular file")
	}
	if b, _ := os.ReadFile(file); string(b) != "x" {
		t.Error("regular file was touched")
	}
}

func TestListenerCloseAndBadSenders(t *testing.T) {
	ln, path := listen(t)
	// A pipe is not a connection: it is dropped, never accepted.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if guestconn.IsSocket(int(r.Fd())) {
		t.Error("guestconn.IsSocket(pipe) = true")
	}
	if err := guestconn.SendFD(path, int(r.Fd())); err != nil {
		t.Fatal(err)
	}
	// A sender with no fd at all.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{0})
	c.Close()
	// A real one after them is still served.
	guest, cmdEnd := guestPair(t)
	if err := guestconn.SendFD(path, int(cmdEnd.Fd())); err != nil {
		t.Fatal(err)
	}
	cmdEnd.Close()
	got := accept(t, ln)
	guest.Write([]byte("x"))
	b := make([]byte, 1)
	if _, err := io.ReadFull(got, b); err != nil || b[0] != 'x' {
		t.Fatalf("read %q, %v", b, err)
	}
	got.Close()

	ln.Close()
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("socket left after Close: %v", err)
	}
	if err := guestconn.SendFD(path, 0); err == nil {
		t.Error("SendFD to a closed listener: no error")
	}
}

// TestEgressServerOnPassedConns runs the broker's proxy on the listener, as
// `corral broker --box` does: a denied host gets the broker's 403 and an
// allowed one reaches the upstream, with no TCP hop between guest and broker.
func TestEgressServerOnPassedConns(t *testing.T) {
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "upstream says hi") }))
	up.Listener.Close()
	up.Listener = brokertest.ListenOutsideBrokerPorts(t)
	up.Start()
	defer up.Close()
	pol, err := egress.ParsePolicy(nil, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := egress.NewServer(egress.Config{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	ln, path := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()

	get := func(target string) (int, string) {
		guest, cmdEnd := guestPair(t)
		if err := guestconn.SendFD(path, int(cmdEnd.Fd())); err != nil {
			t.Fatal(err)
		}
		cmdEnd.Close()
		req, _ := http.NewRequest("GET", target, nil)
		if err := req.WriteProxy(guest); err != nil {
			t.Fatal(err)
		}
		_ = guest.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(guest), req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(up.URL + "/"); code != http.StatusOK || body != "upstream says hi" {
		t.Errorf("allowed: %d %q", code, body)
	}
	if code, body := get("http://denied.example.test/"); code != http.StatusForbidden || !strings.Contains(body, "denied.example.test") {
		t.Errorf("denied: %d %q", code, body)
	}
}
