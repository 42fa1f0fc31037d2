package box

import (
	"runtime"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/funnel"
)

// HostPortsRoute says where and how box m reaches its named host ports
// (host_ports, the IDE bridge), for display: `corral info` and the menu
// show this one sentence, so neither derives the route on its own. ""
// when m has none. The route follows the funnel: under it (qemu, broker
// or offline) each port is a qemu guestfwd the host enforces; otherwise
// (vz) the guest's own nftables open them, which guest root can change.
func HostPortsRoute(m boxmeta.Meta) string {
	if len(m.HostPorts) == 0 {
		return ""
	}
	how := "the guest's nftables open them"
	if funnel.Applies(runtime.GOOS, m.VMType, m.Network) {
		how = "a qemu guestfwd each, host-enforced"
	}
	return "the host's 127.0.0.1, at the broker address in the box; " + how
}
