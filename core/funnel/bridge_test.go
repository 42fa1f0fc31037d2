package funnel

import (
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
)

// TestRelay: a guest connection (a socketpair end, as qemu's guestfwd
// cmd: gives) reaches a server on the host's 127.0.0.1 and both
// directions end cleanly; a broker port is refused whatever listens.
func TestRelay(t *testing.T) {
	// Outside the broker port range, which Relay refuses: the kernel's
	// ephemeral ports include it (a listener there failed 1 run in 30).
	ln := brokertest.ListenOutsideBrokerPorts(t)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c) //nolint:errcheck
	}()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	qemuEnd, guestEnd := os.NewFile(uintptr(fds[0]), "qemu"), os.NewFile(uintptr(fds[1]), "guest")
	defer guestEnd.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	done := make(chan error, 1)
	go func() { done <- Relay(qemuEnd, port); qemuEnd.Close() }()
	guest, err := net.FileConn(guestEnd)
	if err != nil {
		t.Fatal(err)
	}
	defer guest.Close()
	guest.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(guest, "ide hello"); err != nil {
		t.Fatal(err)
	}
	guest.(*net.UnixConn).CloseWrite() //nolint:errcheck
	got, err := io.ReadAll(guest)
	if err != nil || string(got) != "ide hello" {
		t.Fatalf("through the bridge: %q %v", got, err)
	}
	if err := <-done; err != nil {
		t.Errorf("Relay: %v", err)
	}
	if err := Relay(os.Stdin, 42000); err == nil {
		t.Error("Relay to a broker port " + strconv.Itoa(42000) + " went through")
	}
}
