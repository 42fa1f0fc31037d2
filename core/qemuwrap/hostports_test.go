package qemuwrap

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/qemu/qemutest"
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
	m := boxmeta.Meta{Name: name, Network: config.NetworkBroker, BrokerPort: 42999, VMType: "qemu", HostPorts: []int{9229, 63342}}
	if err := boxmeta.Write(l, m); err != nil {
		t.Fatal(err)
	}
	in := qemutest.LimaLaunch(t, l.LimaHome(), name)
	exe := "/opt/corral/bin/corral"
	p, err := NewPlan(in, l, exe)
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
