// Package qemu rewrites the qemu-system command line that Lima builds, for corral's QEMU wrapper.
//
// Lima has no setting for the accelerator on Linux (it always asks for KVM for the native arch) and none for
// the user-mode network beyond what it builds itself. The only hook is the QEMU_SYSTEM_<ARCH> environment
// variable, which corral points at itself; that wrapper calls Rewrite and execs the real qemu (FindQemu).
// Rewrite is pure: it only maps argv to argv, so every rule is table-tested against real Lima argv.
package qemu

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Accel selects the accelerator the rewritten command line asks for.
type Accel int

const (
	// AccelKeep leaves Lima's accelerator choice alone (hardware KVM/HVF that works).
	AccelKeep Accel = iota
	// AccelKVM is AccelKeep spelled for callers that decided KVM is usable.
	AccelKVM
	// AccelTCG forces software emulation, for hosts whose /dev/kvm cannot run a stock kernel.
	AccelTCG
)

// GuestFwdAddr is the in-guest address of corral's broker under the funnel. libslirp refuses a guestfwd
// on the gateway (.2) or DNS (.3) address, and .15 up is Lima's DHCP range.
const GuestFwdAddr = "192.168.5.4"

// DefaultTBSizeMB is the TCG translation-block cache used when Options.TBSizeMB is 0. Lima's own TCG
// default (512) costs ~1.1 GiB RSS for a 1 GiB guest; 128 measured ~650 MiB with no visible slowdown.
const DefaultTBSizeMB = 128

// Options says how to rewrite.
type Options struct {
	Accel    Accel
	TBSizeMB int     // TCG only; 0 means DefaultTBSizeMB
	Funnel   *Funnel // nil leaves the network as Lima built it (unless Offline)
	// Offline restricts Lima's slirp NIC with no guestfwd at all: the guest
	// can open no connection through slirp. It cannot be combined with Funnel.
	Offline bool
	// LoadVM starts the VM from the internal snapshot of that tag (qemu's
	// -loadvm: RAM, devices and disks as they were saved) instead of
	// booting it: how a box saved by `corral stop --save` resumes.
	LoadVM string
	// Balloon adds BalloonDevice: a virtio balloon with free-page
	// reporting, through which the guest's kernel hands the pages it
	// frees back to qemu, which discards them (the host gets the memory
	// back without the guest stopping). A saved state can only be loaded
	// into the machine that made it, so a resume (LoadVM) must ask for
	// the balloon exactly when the saved VM had it (HasBalloon of its
	// command line; core/box records it with the save).
	Balloon bool
}

// BalloonDevice is the -device value Options.Balloon adds (qemu 5.1 and
// later have free-page-reporting; the guest needs virtio_balloon and
// CONFIG_PAGE_REPORTING, Linux 5.7 and later). It goes after every device
// Lima adds, so their PCI slots do not move. The balloon is never
// inflated: corral sets no target, the guest only reports free pages.
const BalloonDevice = "virtio-balloon-pci,id=" + BalloonID + ",free-page-reporting=on"

// BalloonID is the qdev id of corral's balloon.
const BalloonID = "corral-balloon"

// HasBalloon reports whether a qemu command line (argv[0] excluded) has a
// virtio balloon device (corral's or any other).
func HasBalloon(args []string) bool {
	for i := 0; i+1 < len(args); i++ {
		if normFlag(args[i]) != "-device" {
			continue
		}
		driver, _, _ := strings.Cut(args[i+1], ",")
		if strings.HasPrefix(strings.TrimPrefix(driver, "driver="), "virtio-balloon") {
			return true
		}
	}
	return false
}

// Funnel turns Lima's slirp NIC into a host-enforced egress funnel: slirp's restrict=on drops every
// guest-initiated flow except the guestfwd rule, which runs GuestConnCmd on the host once per guest
// connection to GuestFwdAddr:GuestFwdPort, with the connection on its stdin/stdout.
type Funnel struct {
	GuestFwdPort int
	// GuestConnCmd is parsed by qemu shell-like (no shell) and looked up in PATH; use an absolute path.
	// Commas are escaped here (QEMU option syntax).
	GuestConnCmd string
	// Bridges are named host loopback ports the guest may reach, each at
	// GuestFwdAddr:Port through a guestfwd rule of its own that runs Cmd
	// (parsed like GuestConnCmd) per connection; Cmd connects to the
	// host's 127.0.0.1:Port. restrict=on still drops everything else.
	Bridges []Bridge
}

// Bridge is one named host port of a Funnel.
type Bridge struct {
	Port int
	Cmd  string
}

// ErrUnexpectedNetwork means the command line has a network setup the funnel cannot vouch for.
var ErrUnexpectedNetwork = errors.New("unexpected qemu network setup")

// IsProbe reports whether args is one of Lima's feature probes (`--version`, `-accel help`,
// `-M none -netdev help`, `-machine help`, `-cpu help -machine ...`) rather than a VM launch.
// Only tokens that make qemu print and exit count, so a VM launch cannot pass itself off as a probe.
func IsProbe(args []string) bool {
	for i, a := range args {
		switch normFlag(a) {
		case "-version", "-help", "-h":
			return true
		}
		if i == 0 || !isHelpValue(a) {
			continue
		}
		switch normFlag(args[i-1]) {
		case "-accel", "-netdev", "-machine", "-M", "-cpu", "-device", "-nic", "-chardev", "-object":
			return true
		}
	}
	return false
}

func isHelpValue(v string) bool {
	return v == "help" || v == "?" || strings.HasSuffix(v, ",help")
}

// Rewrite returns a new argv (args excludes argv[0]) with the accelerator and network rules of opt applied.
// For a VM launch with opt.Funnel or opt.Offline set it fails closed: the command line must have exactly one
// `-netdev user,...` and no other -netdev, -nic or -net, and nothing that could add one (-readconfig).
func Rewrite(args []string, opt Options) ([]string, error) {
	out := make([]string, 0, len(args)+4)
	tb := opt.TBSizeMB
	if tb == 0 {
		tb = DefaultTBSizeMB
	}
	if tb < 0 {
		return nil, fmt.Errorf("rewriting qemu args: tb-size %d MiB is negative", tb)
	}
	tcg := opt.Accel == AccelTCG
	accelAdded := false
	addAccel := func() {
		if !accelAdded {
			out = append(out, "-accel", "tcg,thread=multi,tb-size="+strconv.Itoa(tb))
			accelAdded = true
		}
	}

	if opt.Offline && opt.Funnel != nil {
		return nil, errors.New("rewriting qemu args: offline and funnel are exclusive")
	}
	restrict := opt.Funnel != nil || opt.Offline
	probe := IsProbe(args)
	var userNetdevs, otherNets []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		flag := normFlag(a)
		hasVal := i+1 < len(args)
		switch {
		case tcg && (flag == "-machine" || flag == "-M") && hasVal:
			v := args[i+1]
			i++
			out = append(out, a, dropMachineAccel(v))
			if !isHelpValue(v) && v != "none" {
				addAccel()
			}
			continue
		case tcg && flag == "-accel" && hasVal:
			v := args[i+1]
			i++
			if isHelpValue(v) {
				out = append(out, a, v)
				continue
			}
			addAccel() // replaces any accelerator Lima asked for
			continue
		case tcg && flag == "-enable-kvm":
			addAccel()
			continue
		case tcg && flag == "-cpu" && hasVal:
			v := args[i+1]
			i++
			out = append(out, a, tcgCPU(v))
			continue
		case flag == "-netdev" && hasVal:
			v := args[i+1]
			if !isHelpValue(v) {
				if strings.HasPrefix(v, "user,") || v == "user" {
					userNetdevs = append(userNetdevs, v)
				} else {
					otherNets = append(otherNets, a+" "+v)
				}
			}
			if restrict && !isHelpValue(v) && (strings.HasPrefix(v, "user,") || v == "user") {
				nv, err := funnelNetdev(v, opt.Funnel)
				if err != nil {
					return nil, err
				}
				v = nv
			}
			out = append(out, a, v)
			i++
			continue
		case flag == "-nic" || flag == "-net" || flag == "-readconfig":
			if hasVal {
				otherNets = append(otherNets, a+" "+args[i+1])
			} else {
				otherNets = append(otherNets, a)
			}
		}
		out = append(out, a)
	}

	if opt.LoadVM != "" && !probe {
		if !loadVMTagRe.MatchString(opt.LoadVM) {
			return nil, fmt.Errorf("rewriting qemu args: invalid snapshot tag %q", opt.LoadVM)
		}
		for _, a := range args {
			if f := normFlag(a); f == "-loadvm" || f == "-incoming" {
				return nil, fmt.Errorf("rewriting qemu args: the command line already has %s", a)
			}
		}
		out = append(out, "-loadvm", opt.LoadVM)
	}
	// A command line that has a balloon already (a Lima that adds one)
	// keeps it: a second one would be refused by the guest's driver.
	if opt.Balloon && !probe && !HasBalloon(args) {
		out = append(out, "-device", BalloonDevice)
	}
	if restrict {
		// A probe prints and exits; everything else must have exactly Lima's one slirp NIC (no NIC at all
		// would give qemu's default, unrestricted, user-mode NIC).
		if len(otherNets) > 0 {
			return nil, fmt.Errorf("rewriting qemu args for the egress funnel: %w: %s (only Lima's default slirp NIC is allowed; remove `networks:` from the Lima config)",
				ErrUnexpectedNetwork, strings.Join(otherNets, ", "))
		}
		if len(userNetdevs) != 1 && !(probe && len(userNetdevs) == 0) {
			return nil, fmt.Errorf("rewriting qemu args for the egress funnel: %w: %d user-mode netdevs, want exactly 1",
				ErrUnexpectedNetwork, len(userNetdevs))
		}
	}
	return out, nil
}

// loadVMTagRe is the snapshot tags -loadvm takes (core/qmp CheckTag).
var loadVMTagRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// normFlag maps qemu's "--opt" spelling to "-opt".
func normFlag(a string) string {
	if strings.HasPrefix(a, "--") && len(a) > 2 {
		return a[1:]
	}
	return a
}

// dropMachineAccel removes accel= (and the whpx-only kernel-irqchip=off) from a -machine value:
// qemu refuses `-accel tcg` together with `-machine ...,accel=kvm`.
func dropMachineAccel(v string) string {
	parts := strings.Split(v, ",")
	kept := parts[:0]
	for _, p := range parts {
		if strings.HasPrefix(p, "accel=") || p == "kernel-irqchip=off" {
			continue
		}
		kept = append(kept, p)
	}
	return strings.Join(kept, ",")
}

// tcgCPU maps the KVM-only "host" CPU model (with any feature suffix) to "max", TCG's closest equivalent.
func tcgCPU(v string) string {
	if v == "host" {
		return "max"
	}
	if rest, ok := strings.CutPrefix(v, "host,"); ok {
		return "max," + rest
	}
	return v
}

// funnelNetdev restricts a user netdev; a nil f (offline) adds no guestfwd.
func funnelNetdev(v string, f *Funnel) (string, error) {
	for _, opt := range strings.Split(v, ",") {
		key, _, _ := strings.Cut(opt, "=")
		switch key {
		case "restrict", "guestfwd", "ipv6", "ipv4", "tftp", "bootfile", "smb":
			// Lima never sets these; a command line that does was not built by the Lima we pin.
			return "", fmt.Errorf("rewriting qemu args for the egress funnel: %w: netdev already sets %s= (%s)",
				ErrUnexpectedNetwork, key, v)
		}
	}
	if f == nil {
		return v + ",restrict=on,ipv6=off", nil
	}
	if f.GuestFwdPort < 1 || f.GuestFwdPort > 65535 {
		return "", fmt.Errorf("rewriting qemu args for the egress funnel: guestfwd port %d out of range", f.GuestFwdPort)
	}
	fwd, err := guestFwd(f.GuestFwdPort, f.GuestConnCmd)
	if err != nil {
		return "", err
	}
	out := v + ",restrict=on,ipv6=off," + fwd
	seen := map[int]bool{f.GuestFwdPort: true}
	for _, b := range f.Bridges {
		if b.Port < 1 || b.Port > 65535 || seen[b.Port] {
			return "", fmt.Errorf("rewriting qemu args for the egress funnel: host port %d out of range or named twice", b.Port)
		}
		seen[b.Port] = true
		fwd, err := guestFwd(b.Port, b.Cmd)
		if err != nil {
			return "", err
		}
		out += "," + fwd
	}
	return out, nil
}

// guestFwd is one guestfwd option: connections to GuestFwdAddr:port run cmd.
func guestFwd(port int, cmd string) (string, error) {
	cmd = strings.TrimSpace(cmd)
	if cmd == "" {
		return "", errors.New("rewriting qemu args for the egress funnel: empty guest connection command")
	}
	if strings.ContainsAny(cmd, "\n\r\x00") {
		return "", fmt.Errorf("rewriting qemu args for the egress funnel: guest connection command %q has a control character", cmd)
	}
	escaped := strings.ReplaceAll(cmd, ",", ",,")
	return fmt.Sprintf("guestfwd=tcp:%s:%d-cmd:%s", GuestFwdAddr, port, escaped), nil
}

// SplitOpts splits a qemu option string at single commas; ",," is a literal
// comma (QemuOpts syntax).
func SplitOpts(s string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == ',' {
			if i+1 < len(s) && s[i+1] == ',' {
				cur.WriteByte(',')
				i++
				continue
			}
			out = append(out, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteByte(s[i])
	}
	return append(out, cur.String())
}
