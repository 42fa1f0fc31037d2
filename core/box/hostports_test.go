package box

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
)

// TestPlanQemuHostPorts: a broker box with named host ports gets one
// guestfwd per port, to the host's loopback through `corral host-conn`,
// after the broker's; the argv the wrapper execs passes the session's
// proof, and fails it when a port is missing, extra or different.
func TestPlanQemuHostPorts(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	name := "ide-1"
	m := Meta{Name: name, Network: config.NetworkBroker, BrokerPort: 42999, VMType: "qemu", HostPorts: []int{9229, 63342}}
	if err := WriteMeta(l, m); err != nil {
		t.Fatal(err)
	}
	in := limaLaunch(t, l.LimaHome(), name)
	exe := "/opt/corral/bin/corral"
	p, err := PlanQemu(in, l, exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []qemu.Bridge{{Port: 9229, Cmd: exe + " host-conn ide-1 9229"}, {Port: 63342, Cmd: exe + " host-conn ide-1 63342"}}
	if p.Options.Funnel == nil || !slices.Equal(p.Options.Funnel.Bridges, want) {
		t.Fatalf("bridges = %+v, want %+v", p.Options.Funnel, want)
	}
	if d := p.Describe(); !strings.Contains(d, "192.168.5.4:63342 to the host's 127.0.0.1:63342") {
		t.Errorf("Describe = %q", d)
	}
	out, err := qemu.Rewrite(in, qemu.Options{Accel: qemu.AccelTCG, Funnel: p.Options.Funnel})
	if err != nil {
		t.Fatal(err)
	}
	var netdev string
	for i := range out {
		if i > 0 && out[i-1] == "-netdev" {
			netdev = out[i]
		}
	}
	for _, w := range []string{
		",restrict=on,ipv6=off,guestfwd=tcp:192.168.5.4:42999-cmd:" + exe + " guest-conn ide-1",
		",guestfwd=tcp:192.168.5.4:9229-cmd:" + exe + " host-conn ide-1 9229",
		",guestfwd=tcp:192.168.5.4:63342-cmd:" + exe + " host-conn ide-1 63342",
	} {
		if !strings.Contains(netdev, w) {
			t.Errorf("netdev %q lacks %q", netdev, w)
		}
	}
	pid := funnel.PIDFile(l.LimaHome(), name)
	proof := funnel.Want{VMType: "qemu", Network: config.NetworkBroker, BrokerPort: 42999, HostPorts: m.HostPorts}
	if err := funnel.CheckArgs(out, pid, name, proof); err != nil {
		t.Errorf("the wrapper's argv fails the proof: %v", err)
	}
	for _, ports := range [][]int{nil, {9229}, {9229, 63342, 8080}, {9229, 63343}} {
		w := proof
		w.HostPorts = ports
		if err := funnel.CheckArgs(out, pid, name, w); !errors.Is(err, funnel.ErrNotEnforced) {
			t.Errorf("named ports %v: proof = %v, want ErrNotEnforced", ports, err)
		}
	}
	// A plan never bridges a port twice, nor the broker's own port.
	for _, bad := range [][]qemu.Bridge{{{Port: 9229, Cmd: "x"}, {Port: 9229, Cmd: "x"}}, {{Port: 42999, Cmd: "x"}}, {{Port: 0, Cmd: "x"}}} {
		f := *p.Options.Funnel
		f.Bridges = bad
		if _, err := qemu.Rewrite(in, qemu.Options{Funnel: &f}); err == nil {
			t.Errorf("bridges %+v rewritten", bad)
		}
	}
}

// TestApplyHostPorts: a start of a stopped box writes host_ports into
// the instance's param and its metadata (which the qemu wrapper reads);
// following the config of a running box leaves both alone, so the session
// check keeps comparing with what the running qemu has.
func TestApplyHostPorts(t *testing.T) {
	s := portsService(t)
	dir := filepath.Join(s.Layout.LimaHome(), "bx")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte("vmType: qemu\nparam:\n  NETWORK: broker\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var r Resolved
	r.Loaded.Config = config.Defaults(config.Platform{OS: "linux", Arch: "amd64"}).Config
	broker := config.NetworkBroker
	r.Loaded.Config.Network = &broker
	r.Loaded.Config.HostPorts = []int{63342}
	m := Meta{Name: "bx"}
	if err := s.applyPorts(r, &m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "lima.yaml"))
	if !slices.Equal(m.HostPorts, []int{63342}) || !strings.Contains(string(b), "HOST_PORTS: \"63342\"") {
		t.Errorf("meta %v, lima.yaml:\n%s", m.HostPorts, b)
	}
	r.Loaded.Config.HostPorts = []int{9229}
	s.followConfig(r, &m)
	if !slices.Equal(m.HostPorts, []int{63342}) {
		t.Errorf("following a running box's config changed its host ports to %v", m.HostPorts)
	}
}

// TestHostPortsRoute: the route sentence info and the menu show follows
// the funnel: host-enforced where it applies, the guest's nftables on vz,
// and nothing for a box without host ports.
func TestHostPortsRoute(t *testing.T) {
	if got := HostPortsRoute(Meta{Network: config.NetworkBroker, VMType: "qemu"}); got != "" {
		t.Errorf("no host ports: %q", got)
	}
	vz := HostPortsRoute(Meta{Network: config.NetworkBroker, VMType: "vz", HostPorts: []int{9229}})
	if !strings.HasSuffix(vz, "the guest's nftables open them") {
		t.Errorf("vz: %q", vz)
	}
	q := HostPortsRoute(Meta{Network: config.NetworkBroker, VMType: "qemu", HostPorts: []int{9229}})
	if want := funnel.Applies(runtime.GOOS, "qemu", config.NetworkBroker); want != strings.HasSuffix(q, "a qemu guestfwd each, host-enforced") {
		t.Errorf("qemu on %s: %q", runtime.GOOS, q)
	}
}
