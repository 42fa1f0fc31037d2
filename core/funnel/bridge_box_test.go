package funnel

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"golang.org/x/sys/unix"
)

// TestBridgeNamedPortsOnly: a guest connection reaches the host port only
// while the box's metadata names it.
func TestBridgeNamedPortsOnly(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HOST"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	write := func(ports []int) {
		if err := boxmeta.Write(l, boxmeta.Meta{Name: "b-1", Network: config.NetworkBroker, VMType: config.VMTypeQEMU, HostPorts: ports}); err != nil {
			t.Fatal(err)
		}
	}
	try := func() (string, error) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		guest := os.NewFile(uintptr(fds[0]), "guest")
		ours := os.NewFile(uintptr(fds[1]), "ours")
		errc := make(chan error, 1)
		go func() { errc <- Bridge(l, "b-1", port, guest); guest.Close() }()
		b, _ := io.ReadAll(ours)
		ours.Close() // the guest's side ends too: the relay's other direction returns
		return string(b), <-errc
	}
	write([]int{port})
	if got, err := try(); err != nil || got != "HOST" {
		t.Errorf("a named port: %q, %v", got, err)
	}
	write(nil)
	if got, err := try(); err == nil || got != "" {
		t.Errorf("a port no longer named: %q, %v (want refused)", got, err)
	}
	if code := HostConnMain([]string{"b-1", "x" + strconv.Itoa(port)}); code != 2 {
		t.Errorf("a bad port argument: exit %d, want 2", code)
	}
}
