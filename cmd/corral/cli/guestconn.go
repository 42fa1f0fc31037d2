package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
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
// the host funnel, see core/funnel).
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

// isGuestConn reports whether args (argv without argv[0]) are a
// `corral guest-conn` invocation, which Main dispatches before anything else.
func isGuestConn(args []string) bool {
	return len(args) > 0 && args[0] == funnel.GuestConnCommand
}

// guestConnMain is `corral guest-conn BOX` as Main runs it: qemu starts one
// per guest connection, so it builds no command tree, reads no config and
// touches nothing but the state directory's layout (issue 18: at most 3 ms
// of CPU per connection; BenchmarkGuestConnProcess in cmd/corral measures
// it). args are argv without argv[0]; NewCmdGuestConn is the same command in
// the tree, for help and tests.
func guestConnMain(args []string) int {
	if len(args) != 2 || args[1] == "" {
		return 2
	}
	opts := &GuestConnOptions{
		Factory: &Factory{Layout: paths.Default},
		Box:     args[1],
	}
	return exitCode(guestConnRun(opts))
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
		fd := int(conn.Fd())
		if !funnel.IsSocket(fd) {
			// qemu's guestfwd cmd: gives a socketpair end (measured with
			// QEMU 7.2 / libslirp 4.7); anything else is not a guest connection.
			err = fmt.Errorf("stdin is not a socket")
		} else {
			err = funnel.SendFD(l.BrokerSocket(opts.Box), fd)
		}
	}
	if err != nil && l.Home != "" {
		if lf, lerr := os.OpenFile(l.BrokerLog(opts.Box), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); lerr == nil {
			fmt.Fprintf(lf, "%s corral guest-conn: box %s: %v\n", time.Now().Format(time.RFC3339), opts.Box, err)
			lf.Close()
		}
	}
	if err != nil {
		return &ExitCodeError{Code: 1}
	}
	return nil
}
