package box

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
)

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
	var r boxmeta.Resolved
	r.Loaded.Config = config.Defaults(config.Platform{OS: "linux", Arch: "amd64"}).Config
	broker := config.NetworkBroker
	r.Loaded.Config.Network = &broker
	r.Loaded.Config.HostPorts = []int{63342}
	m := boxmeta.Meta{Name: "bx"}
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
	if got := HostPortsRoute(boxmeta.Meta{Network: config.NetworkBroker, VMType: "qemu"}); got != "" {
		t.Errorf("no host ports: %q", got)
	}
	vz := HostPortsRoute(boxmeta.Meta{Network: config.NetworkBroker, VMType: "vz", HostPorts: []int{9229}})
	if !strings.HasSuffix(vz, "the guest's nftables open them") {
		t.Errorf("vz: %q", vz)
	}
	q := HostPortsRoute(boxmeta.Meta{Network: config.NetworkBroker, VMType: "qemu", HostPorts: []int{9229}})
	if want := funnel.Applies(runtime.GOOS, "qemu", config.NetworkBroker); want != strings.HasSuffix(q, "a qemu guestfwd each, host-enforced") {
		t.Errorf("qemu on %s: %q", runtime.GOOS, q)
	}
}
