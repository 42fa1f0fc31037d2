package config

import (
	"fmt"
	"slices"

	"github.com/corral-dev/corral/core/egress"
)

// MaxHostPorts caps host_ports: each is a rule of its own (a guestfwd
// under the host funnel), and a box needs a few at most.
const MaxHostPorts = 16

// CheckHostPorts checks host_ports: single ports from MinHostPort to
// 65535 (the ports below are the system's services), none twice, none in
// corral's broker range (another box's broker egresses under that box's
// allow-list), at most MaxHostPorts. Each problem names the port.
func CheckHostPorts(ports []int) []string {
	var out []string
	if len(ports) > MaxHostPorts {
		out = append(out, fmt.Sprintf("%d ports: at most %d", len(ports), MaxHostPorts))
	}
	for i, p := range ports {
		switch {
		case p < MinHostPort || p > 65535:
			out = append(out, fmt.Sprintf("%d: not a port from %d to 65535", p, MinHostPort))
		case egress.IsBrokerPort(p):
			out = append(out, fmt.Sprintf("%d: in corral's broker port range (a box never reaches a broker but its own, and that one at its broker address)", p))
		case slices.Contains(ports[:i], p):
			out = append(out, fmt.Sprintf("%d: named twice", p))
		}
	}
	return out
}

// bridgedPorts is Settings.BridgedPorts.
func bridgedPorts(mode Network, hostPorts []int) []int {
	if mode != NetworkBroker {
		return nil
	}
	var out []int
	for _, p := range hostPorts {
		if len(CheckHostPorts([]int{p})) == 0 {
			out = append(out, p) // Load refuses the others
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return out[:min(len(out), MaxHostPorts)]
}
