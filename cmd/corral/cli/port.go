package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/spf13/cobra"
)

// PortOptions are the options of `corral port`.
type PortOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string // "" = the current project's box
	Port    string // "3000" or "8080:80"
	now     func() time.Time
}

// NewCmdPort builds `corral port [BOX] PORT`.
func NewCmdPort(f *Factory, runF func(*PortOptions) error) *cobra.Command {
	opts := &PortOptions{IO: f.IO, Factory: f, now: time.Now}
	cmd := &cobra.Command{
		Use:   "port [BOX] PORT",
		Short: "Forward a guest port to the host's 127.0.0.1",
		Long: `Port forwards a TCP port of the box to the host's 127.0.0.1 (never another
address): PORT is the guest port ("3000") or HOST:GUEST ("8080:80"). It adds
the port to the box's trusted layer (~/.corral/projects/<box>.toml, the
ports key), so every later start forwards it. A running box gets it at
once, through corral's ssh master of the box (until the box stops); a
stopped one at its next start. Host ports below 1024 need
low_host_ports = true in your config.

The host opens every forwarded connection: the box gets no egress from it.`,
		Example: "  corral port 3000\n  corral port web-3f2a1c 8080:80\n  corral ls",
		Args:    cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Port = args[len(args)-1]
			if len(args) == 2 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return portRun(opts)
		},
	}
	return cmd
}

func portRun(opts *PortOptions) error {
	f := opts.Factory
	p, err := config.ParsePort(opts.Port)
	if err != nil {
		return hint.New(fmt.Errorf("port %q: %w", opts.Port, err), `use a guest port ("3000") or HOST:GUEST ("8080:80")`)
	}
	l, err := f.Layout()
	if err != nil {
		return err
	}
	res, err := box.ForwardPort(l, f.Platform, opts.Box, f.Dir, p, opts.now())
	if res.Written != "" {
		fmt.Fprintf(opts.IO.Out, "box %s: port %s added to %s\n", res.Box, p, res.Written)
	}
	if err != nil {
		return err
	}
	name := res.Box
	switch res.Outcome {
	case box.PortWhenCreated:
		fmt.Fprintf(opts.IO.Out, "box %s: 127.0.0.1:%d will forward to the box's port %d once it is created (corral up)\n", name, p.Host, p.Guest)
		return nil
	case box.PortAtNextStart:
		fmt.Fprintf(opts.IO.Out, "box %s is not running: 127.0.0.1:%d forwards to its port %d from its next start (corral up)\n", name, p.Host, p.Guest)
		return nil
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	switch err := s.AddPort(ctx, name, p); {
	case errors.Is(err, box.ErrPortForwarded):
		fmt.Fprintf(opts.IO.Out, "box %s: 127.0.0.1:%d already forwards to its port %d\n", name, p.Host, p.Guest)
	case err != nil:
		return err
	default:
		fmt.Fprintf(opts.IO.Out, "box %s: 127.0.0.1:%d now forwards to its port %d (no restart needed)\n", name, p.Host, p.Guest)
	}
	return nil
}
