package box

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
)

// limaLaunch is a Lima 1.2.2 qemu argv (core/qemu testdata) for instance
// name in limaHome.
func limaLaunch(t *testing.T, limaHome, name string) []string {
	t.Helper()
	b, err := os.ReadFile("../qemu/testdata/lima-1.2.2-x86_64-kvm.argv")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/tmp/ce2e/lima/c1/", filepath.Join(limaHome, name)+"/")
	return strings.Split(strings.TrimRight(s, "\n"), "\n")[1:]
}

func writeGoldenTemplate(t *testing.T, l paths.Layout, name, network string) {
	t.Helper()
	dir := filepath.Join(l.LimaHome(), name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	y := "vmType: qemu\nparam:\n  AGENT: shell\n  NETWORK: " + network + "\n  PROXY_PORT: \"0\"\n"
	if err := os.WriteFile(filepath.Join(dir, "lima.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPlanQemu(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for name, network := range map[string]config.Network{"b-1": config.NetworkBroker, "o-1": config.NetworkOffline, "f-1": config.NetworkFull, "x-1": "mesh"} {
		if err := WriteMeta(l, Meta{Name: name, Network: network, BrokerPort: 42123, VMType: "qemu"}); err != nil {
			t.Fatal(err)
		}
	}
	writeGoldenTemplate(t, l, "golden-000000000001", "offline")
	writeGoldenTemplate(t, l, "golden-000000000002", "full")
	writeGoldenTemplate(t, l, "golden-000000000003", "broker")
	exe := "/opt/corral/bin/corral"

	tests := []struct {
		name    string
		args    []string
		funnel  *qemu.Funnel
		offline bool
		wantErr string
	}{
		{name: "broker box", args: limaLaunch(t, l.LimaHome(), "b-1"),
			funnel: &qemu.Funnel{GuestFwdPort: 42123, GuestConnCmd: exe + " guest-conn b-1"}},
		{name: "offline box", args: limaLaunch(t, l.LimaHome(), "o-1"), offline: true},
		{name: "full box", args: limaLaunch(t, l.LimaHome(), "f-1")},
		{name: "offline golden", args: limaLaunch(t, l.LimaHome(), "golden-000000000001"), offline: true},
		{name: "full golden", args: limaLaunch(t, l.LimaHome(), "golden-000000000002")},
		{name: "broker golden", args: limaLaunch(t, l.LimaHome(), "golden-000000000003"), wantErr: "no broker"},
		{name: "golden without template", args: limaLaunch(t, l.LimaHome(), "golden-000000000009"), wantErr: "template"},
		{name: "unknown box", args: limaLaunch(t, l.LimaHome(), "nobody-1"), wantErr: "no such box"},
		{name: "unknown network", args: limaLaunch(t, l.LimaHome(), "x-1"), wantErr: "unknown network"},
		{name: "another LIMA_HOME", args: limaLaunch(t, "/elsewhere/lima", "b-1"), wantErr: "not in corral's LIMA_HOME"},
		{name: "no pidfile", args: []string{"-m", "1024", "-netdev", "user,id=net0"}, wantErr: "no -pidfile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := PlanQemu(tt.args, l, exe)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p.Options.Funnel == nil) != (tt.funnel == nil) || p.Options.Funnel != nil && *p.Options.Funnel != *tt.funnel || p.Options.Offline != tt.offline {
				t.Errorf("plan = %+v (funnel %+v), want funnel %+v offline %v", p, p.Options.Funnel, tt.funnel, tt.offline)
			}
		})
	}
}

// TestWrapperOutputPassesTheProof checks that what the wrapper execs is what
// the session check accepts: the two sides of the funnel agree.
func TestWrapperOutputPassesTheProof(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	for _, network := range []config.Network{config.NetworkBroker, config.NetworkOffline} {
		name := string(network) + "-1"
		if err := WriteMeta(l, Meta{Name: name, Network: network, BrokerPort: 42999, VMType: "qemu"}); err != nil {
			t.Fatal(err)
		}
		in := limaLaunch(t, l.LimaHome(), name)
		p, err := PlanQemu(in, l, "/Users/A B/corral,x/corral")
		if err != nil {
			t.Fatal(err)
		}
		out, err := qemu.Rewrite(in, qemu.Options{Accel: qemu.AccelTCG, Funnel: p.Options.Funnel, Offline: p.Options.Offline})
		if err != nil {
			t.Fatal(err)
		}
		want := funnel.Want{VMType: "qemu", Network: network, BrokerPort: 42999}
		if err := funnel.CheckArgs(out, funnel.PIDFile(l.LimaHome(), name), name, want); err != nil {
			t.Errorf("%s: wrapper output fails the proof: %v", network, err)
		}
		if err := funnel.CheckArgs(in, funnel.PIDFile(l.LimaHome(), name), name, want); !errors.Is(err, funnel.ErrNotEnforced) {
			t.Errorf("%s: Lima's own argv passes the proof: %v", network, err)
		}
	}
}
