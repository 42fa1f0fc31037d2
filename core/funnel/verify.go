package funnel

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"

	"github.com/corral-dev/corral/core/procinfo"
	"github.com/corral-dev/corral/core/qemu"

	"github.com/corral-dev/corral/core/untrusted"
)

// ErrNotEnforced means a box that needs the funnel runs a qemu without it,
// for example one started with plain `limactl start`.
var ErrNotEnforced = errors.New("the host egress funnel is not in force")

// Want is what a box's running qemu must prove.
type Want struct {
	VMType     config.VMType
	Network    config.Network // broker or offline (others need no proof)
	BrokerPort int            // broker mode: the guestfwd port
	// HostPorts are the named host ports (broker mode): one more guestfwd
	// each, to the host's 127.0.0.1 at the same port (see Relay).
	HostPorts []int
}

// PIDFile is the pid file Lima has qemu write for an instance.
func PIDFile(limaHome, box string) string { return filepath.Join(limaHome, box, "qemu.pid") }

// Verify proves that the running qemu of box (in limaHome) enforces w: it
// reads the pid from the instance's qemu.pid and the command line of that
// process. It returns nil for a box the funnel does not apply to on this
// host, and an error wrapping ErrNotEnforced, with a hint, when the command
// line lacks the funnel.
func Verify(limaHome, box string, w Want) error {
	if !Applies(runtime.GOOS, w.VMType, w.Network) {
		return nil
	}
	pidFile := PIDFile(limaHome, box)
	pid, err := untrusted.ReadPID(pidFile)
	if err != nil {
		return fmt.Errorf("proving the egress funnel of box %s: %w", box, err)
	}
	args, err := procinfo.Argv(pid)
	if err != nil {
		return fmt.Errorf("proving the egress funnel of box %s: reading the command line of qemu (pid %d): %w", box, pid, err)
	}
	if len(args) == 0 {
		return fmt.Errorf("proving the egress funnel of box %s: pid %d has no command line (not running?)", box, pid)
	}
	return CheckArgs(args[1:], pidFile, box, w)
}

// CheckArgs checks a qemu argv (argv[0] excluded) against w: it must be the
// qemu of pidFile, with exactly one network, Lima's slirp NIC, carrying
// restrict=on and ipv6=off, no tftp/smb, and in broker mode exactly one
// guestfwd, to GuestAddr:BrokerPort running `... guest-conn box`; offline
// mode has no guestfwd.
func CheckArgs(args []string, pidFile, box string, w Want) error {
	fail := func(format string, a ...any) error {
		return hint.New(fmt.Errorf("refusing a session in box %s: %w: %s", box, ErrNotEnforced, fmt.Sprintf(format, a...)), fmt.Sprintf("the box was not started by corral (for example with plain limactl start); restart it: corral stop %s && corral up", box))
	}
	var netdevs, others []string
	pidOK := false
	for i := 0; i < len(args); i++ {
		flag := args[i]
		if strings.HasPrefix(flag, "--") {
			flag = flag[1:]
		}
		switch flag {
		case "-pidfile":
			if i+1 < len(args) && filepath.Clean(args[i+1]) == filepath.Clean(pidFile) {
				pidOK = true
			}
		case "-netdev":
			if i+1 < len(args) {
				netdevs = append(netdevs, args[i+1])
			}
		case "-nic", "-net", "-readconfig":
			others = append(others, flag)
		}
	}
	if !pidOK {
		return fail("the process in %s is not this box's qemu", pidFile)
	}
	if len(others) > 0 {
		return fail("qemu has %s", strings.Join(others, ", "))
	}
	if len(netdevs) != 1 {
		return fail("qemu has %d netdevs, want exactly Lima's one slirp NIC", len(netdevs))
	}
	opts := qemu.SplitOpts(netdevs[0])
	if len(opts) == 0 || opts[0] != "user" && !strings.HasPrefix(opts[0], "type=user") {
		return fail("the netdev is not slirp: %s", netdevs[0])
	}
	var restrict, ipv6, fwds []string
	for _, o := range opts[1:] {
		k, v, _ := strings.Cut(o, "=")
		switch k {
		case "restrict":
			restrict = append(restrict, v)
		case "ipv6":
			ipv6 = append(ipv6, v)
		case "guestfwd":
			fwds = append(fwds, v)
		case "tftp", "bootfile", "smb", "ipv4":
			return fail("the netdev sets %s=", k)
		}
	}
	if len(restrict) != 1 || restrict[0] != "on" {
		return fail("the netdev lacks restrict=on")
	}
	if len(ipv6) != 1 || ipv6[0] != "off" {
		return fail("the netdev lacks ipv6=off")
	}
	switch w.Network {
	case config.NetworkOffline:
		if len(fwds) != 0 {
			return fail("an offline box has a guestfwd")
		}
	case config.NetworkBroker:
		if len(fwds) != 1+len(w.HostPorts) {
			return fail("the netdev has %d guestfwd rules, want %d (to the broker, and one per named host port)", len(fwds), 1+len(w.HostPorts))
		}
		prefix := fmt.Sprintf("tcp:%s:%d-cmd:", GuestAddr, w.BrokerPort)
		cmd, ok := strings.CutPrefix(fwds[0], prefix)
		if !ok || !strings.HasSuffix(cmd, " "+GuestConnCommand+" "+shellWord(box)) {
			return fail("the guestfwd %q does not lead to the broker of box %s at %s:%d", fwds[0], box, GuestAddr, w.BrokerPort)
		}
		// The others, in order, each to its named port and nothing else.
		for i, port := range w.HostPorts {
			f := fwds[1+i]
			cmd, ok := strings.CutPrefix(f, fmt.Sprintf("tcp:%s:%d-cmd:", GuestAddr, port))
			if !ok || !strings.HasSuffix(cmd, " "+BridgeCommandName+" "+shellWord(box)+" "+strconv.Itoa(port)) {
				return fail("the guestfwd %q is not the named host port %d of box %s", f, port, box)
			}
		}
	default:
		return fmt.Errorf("proving the egress funnel of box %s: network %q needs no funnel", box, w.Network)
	}
	return nil
}
