package funnel

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// The IDE bridge: named host loopback ports (host_ports) a box may reach.
// Under the funnel each is one more guestfwd rule of the box's qemu, to
// GuestAddr:PORT, whose command (`corral host-conn BOX PORT`, run by qemu
// per guest connection with the connection on its stdin) connects to the
// host's 127.0.0.1:PORT and relays. restrict=on still drops everything
// else, so the VM process reaches the broker and the named ports only;
// CheckArgs proves exactly that from its command line.

// BridgeCommandName is the subcommand qemu runs per guest connection to a
// named host port.
const BridgeCommandName = "host-conn"

// BridgeCommand is the guestfwd command for host port port of box: exe
// host-conn box port, quoted as GuestCommand quotes.
func BridgeCommand(exe, box string, port int) string {
	return shellWord(exe) + " " + BridgeCommandName + " " + shellWord(box) + " " + strconv.Itoa(port)
}

// bridgeDialTimeout bounds connecting to the host port.
const bridgeDialTimeout = 5 * time.Second

// Relay connects conn (the guest connection qemu hands the command on its
// stdin) to the host's 127.0.0.1:port and copies both ways until both
// are done, half-closing each direction as it ends. It refuses a port in
// corral's broker range, whatever the caller checked.
func Relay(conn *os.File, port int) error {
	if port < 1 || port > 65535 || egress.IsBrokerPort(port) {
		return fmt.Errorf("host port %d: not a port a box may reach", port)
	}
	guest, err := net.FileConn(conn)
	if err != nil {
		return fmt.Errorf("host port %d: the guest connection is not a socket: %w", port, err)
	}
	defer guest.Close()
	host, err := net.DialTimeout("tcp", netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)).String(), bridgeDialTimeout)
	if err != nil {
		return fmt.Errorf("host port %d: %w", port, err)
	}
	defer host.Close()
	done := make(chan error, 1)
	go func() { done <- halfCopy(host, guest) }()
	err = halfCopy(guest, host)
	return errors.Join(err, <-done)
}

func halfCopy(dst, src net.Conn) error {
	_, err := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite() //nolint:errcheck // the other direction may still run
	} else {
		dst.Close()
	}
	return err
}

// Bridge is one guest connection to a named host port, as qemu starts it:
// `corral host-conn BOX PORT`, the connection on conn. It relays only while
// the box's metadata still names the port (host_ports as applied at its
// last start): a port taken away since is refused whatever qemu's
// command line says. The rule lives here, not in the CLI; cmd/corral runs
// it without the command tree (HostConnMain) and the hidden cobra command
// calls the same function.
func Bridge(l paths.Layout, box string, port int, conn *os.File) error {
	m, err := boxmeta.Read(l, box)
	if err != nil {
		return err
	}
	if !slices.Contains(m.HostPorts, port) {
		return fmt.Errorf("box %s does not name host port %d", box, port)
	}
	return Relay(conn, port)
}

// HostConnMain is the program mode `corral host-conn BOX PORT` (args
// after the subcommand): it prints nothing, because stdout and stderr are
// the guest connection itself, and says how it went by its exit code only
// (2: bad arguments, 1: refused or failed).
func HostConnMain(args []string) int {
	if len(args) != 2 || args[0] == "" {
		return 2
	}
	port, err := strconv.Atoi(args[1])
	if err != nil || strconv.Itoa(port) != args[1] {
		return 2
	}
	l, err := paths.Default()
	if err != nil {
		return 1
	}
	if Bridge(l, args[0], port, os.Stdin) != nil {
		return 1
	}
	return 0
}
