package cli

import (
	"os"

	"github.com/corral-dev/corral/core/guestconn"
	"github.com/spf13/cobra"
)

// GuestConnOptions are the options of `corral guest-conn`.
type GuestConnOptions struct {
	Factory *Factory
	Box     string
	// Conn is the guest connection; nil is stdin, where qemu puts it.
	Conn *os.File
}

// NewCmdGuestConn builds the hidden `corral guest-conn BOX`, which qemu runs
// once per guest connection to the broker address (the guestfwd rule of
// the host funnel, see core/funnel). cmd/corral/main.go runs it through
// guestconn.Main, without a command tree (issue 18: at most 3 ms of CPU per
// connection); this is the same command in the tree, for help and tests.
func NewCmdGuestConn(f *Factory, runF func(*GuestConnOptions) error) *cobra.Command {
	opts := &GuestConnOptions{Factory: f}
	return &cobra.Command{
		Use:    "guest-conn BOX",
		Short:  "Hand a guest connection on stdin to the box's broker (run by qemu)",
		Hidden: true,
		Args:   cobra.ArbitraryArgs, // checked in the run: usage text would go to the guest
		// No idle sweep: this runs for every guest connection.
		PersistentPreRun: func(*cobra.Command, []string) {},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return &ExitCodeError{Code: 2}
			}
			opts.Box = args[0]
			if runF != nil {
				return runF(opts)
			}
			return guestConnRun(opts)
		},
	}
}

// guestConnRun passes the connection's socket to the broker and exits. It
// prints nothing: stdout and stderr are the guest connection itself. A
// failure goes to the box's broker log, and the guest sees the connection
// close.
func guestConnRun(opts *GuestConnOptions) error {
	conn := opts.Conn
	if conn == nil {
		conn = os.Stdin
	}
	l, err := opts.Factory.Layout()
	if err == nil {
		err = guestconn.Run(l, opts.Box, conn)
	}
	if err != nil {
		return &ExitCodeError{Code: 1}
	}
	return nil
}
