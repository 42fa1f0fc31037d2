package cli

import (
	"fmt"
	"net"

	"github.com/corral-dev/corral/core/broker"
	"github.com/spf13/cobra"
)

// BrokerOptions are the options of `corral broker`.
type BrokerOptions struct {
	IO      *IOStreams
	Factory *Factory

	Listen      string
	Box         string
	Allow       []string
	AllowRanges []string
	LogFile     string
}

// NewCmdBroker builds `corral broker`. Its command line is the contract
// broker.Argv writes and broker.ParseArgv reads.
func NewCmdBroker(f *Factory, runF func(*BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   broker.Command + " --listen 127.0.0.1:PORT (--box BOX | --allow HOST...)",
		Short: "Run an egress broker (the allow-list proxy of a box) in the foreground",
		Long: `Broker runs the host-side egress proxy until SIGINT or SIGTERM.

With --box it serves a box: the allow-list is the agent's default hosts,
the golden's toolchains group, the egress groups the config opts into, the
egress config and the approvals granted with "corral allow". The
host's own files (global and per-box config, approvals) are reloaded live
when they change; the repository's .corral.toml is read once, at start,
because the box can write it. Decisions go to the box's egress log
(see "corral egress") and denials to the audit log. corral up starts this
mode by itself.

Without --box it is a standalone proxy for debugging and benchmarks: the
allow-list is the --allow entries and --allow-range ranges, and decisions
go to --log if given.

The broker listens on loopback only.`,
		Example: `  corral broker --box web-3f2a1c --listen 127.0.0.1:42123
  corral broker --listen 127.0.0.1:8080 --allow 'api.example.test' --allow '*.example.test:*' --allow-range 127.0.0.0/8 --log /tmp/egress.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.core().Check(); err != nil {
				return fmt.Errorf("broker: %w", err)
			}
			if runF != nil {
				return runF(opts)
			}
			return brokerRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, broker.FlagListen, "", "loopback `address` to listen on, such as 127.0.0.1:42000")
	cmd.Flags().StringVar(&opts.Box, broker.FlagBox, "", "serve `BOX` with its config and approvals")
	cmd.Flags().StringArrayVar(&opts.Allow, "allow", nil, "allow `ENTRY` (host, *.domain, host:port, host:* or a CIDR range, as egress takes); without --box only")
	cmd.Flags().StringArrayVar(&opts.AllowRanges, "allow-range", nil, "allow private or IP-literal destinations in `CIDR`; without --box only")
	cmd.Flags().StringVar(&opts.LogFile, "log", "", "append decisions to `FILE` as JSON lines; without --box only")
	return cmd
}

// core returns the broker's options from the flags, without the layout
// (which brokerRun adds, as it may fail).
func (opts *BrokerOptions) core() broker.Options {
	return broker.Options{
		Platform:    opts.Factory.Platform,
		Logger:      opts.Factory.Logger,
		Listen:      opts.Listen,
		Box:         opts.Box,
		Allow:       opts.Allow,
		AllowRanges: opts.AllowRanges,
		LogFile:     opts.LogFile,
		Listening: func(addr net.Addr) {
			fmt.Fprintf(opts.IO.ErrOut, "corral broker: listening on %s\n", addr)
		},
	}
}

func brokerRun(opts *BrokerOptions) error {
	o := opts.core()
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	o.Layout = l
	return broker.Serve(o)
}
