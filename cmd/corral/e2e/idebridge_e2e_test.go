//go:build e2e

package e2e

import (
	"strings"
	"testing"
)

// ideBridge proves the IDE bridge (host_ports) on TestHostFunnel's
// broker-mode qemu box, which booted with named's port in its trusted
// layer (naming it at the first boot saves a restart, minutes under TCG):
// a host loopback server whose port the trusted layer names is reachable
// from the box at 192.168.5.4:PORT, through a guestfwd of its own that
// runs `corral host-conn`; unnamed, a server on a port no one named, is
// not, at either slirp address, even after guest root flushes the
// guest's firewall (the boundary is the qemu process).
func ideBridge(t *testing.T, x *h, named, unnamed *hostServer) {
	cl := x.qemuCmdline(x.box)
	if want := ",guestfwd=tcp:192.168.5.4:" + named.port + "-cmd:"; !strings.Contains(cl, want) ||
		!strings.Contains(cl, " host-conn "+x.box+" "+named.port) {
		t.Errorf("qemu command line lacks the guestfwd of host port %s:\n%s", named.port, cl)
	}
	if strings.Count(cl, "guestfwd=") != 2 || strings.Contains(cl, ":"+unnamed.port+"-cmd:") {
		t.Errorf("want exactly the broker's guestfwd and the named port's:\n%s", cl)
	}
	if info := x.ok("info"); !strings.Contains(info, named.port+" (the host's 127.0.0.1") {
		t.Errorf("corral info does not show host port %s:\n%s", named.port, info)
	}

	get := func(sudo bool, target, path string) (string, int) {
		args := []string{"run", "--"}
		if sudo {
			args = append(args, "sudo")
		}
		args = append(args, "curl", "-sS", "--noproxy", "*", "--max-time", "15", "http://"+target+path)
		o, _, code := x.corral(args...)
		return o, code
	}
	if got, code := get(false, "192.168.5.4:"+named.port, "/ide-named"); code != 0 || got != "HOST-REACHED /ide-named" {
		t.Errorf("the named host port from the box: %q (exit %d)", got, code)
	}
	for _, target := range []string{"192.168.5.4:" + unnamed.port, "192.168.5.2:" + unnamed.port, "192.168.5.2:" + named.port} {
		if got, code := get(false, target, "/ide-unnamed"); code == 0 {
			t.Errorf("%s reached from the box: %q", target, got)
		}
	}
	// The guest's nftables are not the boundary: flushed by root, the
	// named port still answers and the unnamed one still does not.
	x.ok("run", "--", "sudo", "nft", "flush", "ruleset")
	if got, code := get(true, "192.168.5.4:"+named.port, "/ide-named-root"); code != 0 || got != "HOST-REACHED /ide-named-root" {
		t.Errorf("the named host port after the flush: %q (exit %d)", got, code)
	}
	for _, target := range []string{"192.168.5.4:" + unnamed.port, "192.168.5.2:" + unnamed.port} {
		if got, code := get(true, target, "/ide-unnamed"); code == 0 {
			t.Errorf("root reached %s: %q", target, got)
		}
	}
	if n := unnamed.count("/ide-unnamed"); n != 0 {
		t.Errorf("the unnamed host server got %d requests", n)
	}
	if n := named.count("/ide-named") + named.count("/ide-named-root"); n != 2 {
		t.Errorf("the named host server got %d requests, want 2", n)
	}
}
