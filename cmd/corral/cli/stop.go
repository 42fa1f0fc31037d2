package cli

import (
	"context"

	"fmt"

	"github.com/corral-dev/corral/core/box"

	"github.com/spf13/cobra"
)

// StopOptions are the options of `corral stop`.
type StopOptions struct {
	IO      *IOStreams
	Factory *Factory
	Boxes   []string
	Idle    bool
}

// NewCmdStop builds `corral stop`.
func NewCmdStop(f *Factory, runF func(*StopOptions) error) *cobra.Command {
	opts := &StopOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:     "stop [BOX...]",
		Short:   "Stop boxes and their brokers (default: the project's box)",
		Example: "  corral stop\n  corral stop web-3f2a1c api-77aa01\n  corral stop --idle",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Boxes = args
			if runF != nil {
				return runF(opts)
			}
			return stopRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Idle, "idle", false, "stop every idle box (no session, no activity for longer than its idle_stop)")
	return cmd
}

func stopRun(opts *StopOptions) error {
	if opts.Idle {
		s, err := opts.Factory.Service()
		if err != nil {
			return err
		}
		ctx, cancel := signalContext()
		defer cancel()
		stopped, err := s.Sweep(ctx)
		for _, b := range stopped {
			fmt.Fprintf(opts.IO.Out, "stopped idle box %s\n", b)
		}
		if len(stopped) == 0 && err == nil {
			fmt.Fprintln(opts.IO.Out, "no idle boxes")
		}
		return err
	}
	return eachBox(opts.Factory, opts.Boxes, func(ctx context.Context, s *box.Service, b string) error {
		if err := s.Stop(ctx, b, ""); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "stopped %s\n", b)
		return nil
	})
}
