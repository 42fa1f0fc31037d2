package cli

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
)

// socketPair stands in for qemu's guestfwd: the guest's end and the end
// qemu puts on guest-conn's stdin.
func socketPair(t *testing.T) (net.Conn, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	gf := os.NewFile(uintptr(fds[0]), "guest")
	guest, err := net.FileConn(gf)
	gf.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guest.Close() })
	return guest, os.NewFile(uintptr(fds[1]), "stdin")
}

func guestConn(t *testing.T, e env, conn *os.File, args ...string) int {
	t.Helper()
	f, out, errOut := testFactory(e, false)
	cmd := NewCmdGuestConn(f, func(o *GuestConnOptions) error {
		o.Conn = conn
		return guestConnRun(o)
	})
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.Execute()
	if out.Len()+errOut.Len() > 0 {
		t.Errorf("guest-conn printed %q %q: that would go into the guest connection", out, errOut)
	}
	return exitCode(err)
}

func TestGuestConnPassesTheSocket(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	ln, err := funnel.Listen(l.BrokerSocket(e.box), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	guest, stdin := socketPair(t)
	if code := guestConn(t, e, stdin, e.box); code != 0 {
		t.Fatalf("guest-conn exit %d", code)
	}
	stdin.Close() // the process is gone
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	guest.Write([]byte("hello\n"))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "hello\n" {
		t.Errorf("broker read %q, %v", line, err)
	}
}

func TestGuestConnFailsQuietly(t *testing.T) {
	e := setup(t, "")
	l := paths.Layout{Home: e.home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	// No broker listening: non-zero, and the reason is in the broker log.
	_, stdin := socketPair(t)
	if code := guestConn(t, e, stdin, e.box); code == 0 {
		t.Error("no broker: exit 0")
	}
	b, _ := os.ReadFile(l.BrokerLog(e.box))
	if !strings.Contains(string(b), "guest-conn: box "+e.box) {
		t.Errorf("broker log %q", b)
	}
	// stdin that is not a socket.
	r, w, _ := os.Pipe()
	defer w.Close()
	if code := guestConn(t, e, r, e.box); code == 0 {
		t.Error("pipe stdin: exit 0")
	}
	// Wrong argument count: non-zero, no usage text.
	if code := guestConn(t, e, r); code == 0 {
		t.Error("no box argument: exit 0")
	}
}

// TestBrokerServesPassedConns runs the box-mode broker and reaches it the
// way a funneled guest does: through guest-conn's fd passing, with a CIDR
// egress entry in the trusted layer allowing a loopback upstream.
func TestBrokerServesPassedConns(t *testing.T) {
	e := setup(t, "")
	l := writeBoxMeta(t, e, "broker")
	if err := os.WriteFile(l.ProjectConfig(e.box), []byte("egress = [\"127.0.0.0/8\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port := brokertest.Upstream(t)
	startBroker(t, e, []string{"--box", e.box, "--listen", "127.0.0.1:0"})
	if fi, err := os.Stat(l.BrokerSocket(e.box)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("broker socket: %v, %v", fi, err)
	}
	get := func(target string) (int, string) {
		guest, stdin := socketPair(t)
		if code := guestConn(t, e, stdin, e.box); code != 0 {
			t.Fatalf("guest-conn exit %d", code)
		}
		stdin.Close()
		req, _ := http.NewRequest("GET", target, nil)
		if err := req.WriteProxy(guest); err != nil {
			t.Fatal(err)
		}
		guest.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(guest), req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("http://127.0.0.1:" + port + "/"); code != http.StatusOK || !strings.HasPrefix(body, "hello from") {
		t.Errorf("allowed loopback upstream: %d %q", code, body)
	}
	if code, _ := get("http://api.example.test:" + port + "/"); code != http.StatusForbidden {
		t.Errorf("denied host: %d", code)
	}
}
