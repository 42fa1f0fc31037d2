package cli

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// boxStopper is what `corral stop` needs of the lifecycle service.
type boxStopper interface {
	Stop(ctx context.Context, box string, kind audit.Kind) error
	Save(ctx context.Context, box string, kind audit.Kind) error
	Sweep(ctx context.Context) ([]string, error)
}

var _ boxStopper = (*box.Service)(nil)

// StopOptions are the options of `corral stop`.
type StopOptions struct {
	IO      *IOStreams
	Service func() (boxStopper, error)
	// Project names the box of the current project, for a stop without
	// names.
	Project func() (string, error)
	Boxes   []string
	Idle    bool
	// Save suspends the boxes to disk instead (qemu only): the next up
	// resumes them.
	Save bool
}

// NewCmdStop builds `corral stop`.
func NewCmdStop(f *Factory, runF func(*StopOptions) error) *cobra.Command {
	opts := &StopOptions{IO: f.IO,
		Service: func() (boxStopper, error) { return f.Service() },
		Project: func() (string, error) { return boxArg(f, nil) }}
	cmd := &cobra.Command{
		Use:     "stop [BOX...]",
		Short:   "Stop boxes and their brokers (default: the project's box)",
		Example: "  corral stop\n  corral stop web-3f2a1c api-77aa01\n  corral stop --idle\n  corral stop --save",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Boxes = args
			if runF != nil {
				return runF(opts)
			}
			return stopRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Idle, "idle", false, "stop every idle box (no session, no activity for longer than its idle_stop)")
	cmd.Flags().BoolVar(&opts.Save, "save", false, "save the box's running state to its disk and free its memory; corral up resumes it (qemu only; idle_action = \"save\" does it for --idle)")
	cmd.MarkFlagsMutuallyExclusive("idle", "save")
	return cmd
}

func stopRun(opts *StopOptions) error {
	names := opts.Boxes
	if len(names) == 0 && !opts.Idle {
		b, err := opts.Project()
		if err != nil {
			return err
		}
		names = []string{b}
	}
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	if opts.Idle {
		stopped, err := s.Sweep(ctx)
		for _, b := range stopped {
			fmt.Fprintf(opts.IO.Out, "stopped idle box %s\n", b)
		}
		if len(stopped) == 0 && err == nil {
			fmt.Fprintln(opts.IO.Out, "no idle boxes")
		}
		return err
	}
	for _, b := range names {
		if opts.Save {
			if err := s.Save(ctx, b, audit.KindSave); err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.Out, "saved %s\n", b)
			continue
		}
		if err := s.Stop(ctx, b, ""); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "stopped %s\n", b)
	}
	return nil
}
