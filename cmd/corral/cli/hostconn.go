package cli

import (
	"os"
	"strconv"

	"github.com/corral-dev/corral/core/funnel"
	"github.com/spf13/cobra"
)

// HostConnOptions are the options of `corral host-conn`.
type HostConnOptions struct {
	Factory *Factory
	Box     string
	Port    int
	// Conn is the guest connection; nil is stdin, where qemu puts it.
	Conn *os.File
}

// NewCmdHostConn builds the hidden `corral host-conn BOX PORT`, which qemu
// runs once per guest connection to a named host port (host_ports; the
// guestfwd rules of the IDE bridge, see core/funnel). cmd/corral/main.go
// runs it through funnel.HostConnMain, without a command tree; this is the
// same command in the tree, for help and tests.
func NewCmdHostConn(f *Factory, runF func(*HostConnOptions) error) *cobra.Command {
	opts := &HostConnOptions{Factory: f}
	return &cobra.Command{
		Use:    "host-conn BOX PORT",
		Short:  "Relay a guest connection on stdin to a named host loopback port (run by qemu)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs, // checked in the run: usage text would go to the guest
		// No idle sweep: this runs for every guest connection.
		PersistentPreRun: func(*cobra.Command, []string) {},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || args[0] == "" {
				return &ExitCodeError{Code: 2}
			}
			port, err := strconv.Atoi(args[1])
			if err != nil || strconv.Itoa(port) != args[1] {
				return &ExitCodeError{Code: 2}
			}
			opts.Box, opts.Port = args[0], port
			if runF != nil {
				return runF(opts)
			}
			return hostConnRun(opts)
		},
	}
}

// hostConnRun is funnel.Bridge (the rule's one home): it prints nothing,
// because stdout and stderr are the guest connection itself.
func hostConnRun(opts *HostConnOptions) error {
	conn := opts.Conn
	if conn == nil {
		conn = os.Stdin
	}
	l, err := opts.Factory.Layout()
	if err != nil {
		return &ExitCodeError{Code: 1}
	}
	if funnel.Bridge(l, opts.Box, opts.Port, conn) != nil {
		return &ExitCodeError{Code: 1}
	}
	return nil
}
