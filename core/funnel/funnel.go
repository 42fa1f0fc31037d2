// Package funnel is the host-enforced egress funnel of boxes that qemu runs.
//
// In broker and offline mode the boundary is qemu's user-mode network
// (libslirp) with restrict=on, set by corral's qemu wrapper (core/qemu): the
// guest can open no connection of its own through slirp, except the one
// guestfwd rule to GuestAddr:<broker port> in broker mode. For each guest
// connection to that address qemu runs `corral guest-conn BOX` with the
// connection on its stdin; guest-conn passes that socket to the box's broker
// over a Unix socket (SCM_RIGHTS, guestconn.SendFD) and exits, and the broker serves it
// like an accepted TCP connection (Listener). The filter runs in the qemu
// process on the host, so root in the box cannot undo it.
//
// Lima fails open (`limactl start` without corral's QEMU_SYSTEM_<ARCH> runs
// the same VM unrestricted), so Verify reads the running qemu's command line
// before every session and refuses one that lacks the funnel.
package funnel

import (
	"strings"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/guestconn"
	"github.com/corral-dev/corral/core/qemu"
)

// GuestAddr is where the guest reaches the broker under the funnel. libslirp
// refuses a guestfwd on the gateway (192.168.5.2) or DNS (.3) address.
const GuestAddr = qemu.GuestFwdAddr

// BrokerGuestHost is where a guest without the funnel reaches its broker:
// the slirp gateway, which maps to the host's loopback.
const BrokerGuestHost = "192.168.5.2"

// BrokerGuestHostFor is where a box's guest reaches its broker: under the
// host funnel (Applies: qemu, broker or offline mode) GuestAddr
// (192.168.5.4), else the slirp gateway BrokerGuestHost.
func BrokerGuestHostFor(p config.Platform, c config.Settings) string {
	if Applies(p.OS, c.VMType, c.NetworkMode()) {
		return GuestAddr
	}
	return BrokerGuestHost
}

// GuestConnCommand is the subcommand qemu runs per guest connection (see
// core/guestconn, which runs it).
const GuestConnCommand = guestconn.Command

// Applies reports whether the host enforces a box's network mode: the qemu
// driver (Linux; macOS with vm_type = "qemu") in broker or offline mode. vz
// has no such hook in Lima, so there the guest-side nftables are the only
// funnel.
func Applies(goos string, vmType config.VMType, network config.Network) bool {
	if vmType != config.VMTypeQEMU || (goos != "linux" && goos != "darwin") {
		return false
	}
	return network == config.NetworkBroker || network == config.NetworkOffline
}

// GuestCommand is the guestfwd command for a box: exe guest-conn box,
// quoted for qemu's shell-like parser (g_shell_parse_argv, no shell runs).
// Commas are left alone; core/qemu doubles them for qemu's option syntax.
func GuestCommand(exe, box string) string {
	return shellWord(exe) + " " + GuestConnCommand + " " + shellWord(box)
}

// shellWord quotes s for g_shell_parse_argv when it holds anything but
// plainly safe characters.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
