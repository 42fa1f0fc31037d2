package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/spf13/cobra"
)

// boxStopper is what `corral stop` needs of the lifecycle service.
type boxStopper interface {
	Stop(ctx context.Context, box string, kind audit.Kind) error
	Save(ctx context.Context, box string, kind audit.Kind) error
	Sweep(ctx context.Context) ([]string, error)
	List() ([]box.Status, error)
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
	// All stops every box whose VM or broker runs (the Homebrew cask's
	// uninstall runs it before the binary goes).
	All bool
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
		Example: "  corral stop\n  corral stop web-3f2a1c api-77aa01\n  corral stop --idle\n  corral stop --all\n  corral stop --save",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Boxes = args
			if opts.All && len(args) > 0 {
				return fmt.Errorf("corral stop --all takes no box names")
			}
			if runF != nil {
				return runF(opts)
			}
			return stopRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Idle, "idle", false, "stop every idle box (no session, no activity for longer than its idle_stop)")
	cmd.Flags().BoolVar(&opts.Save, "save", false, "save the box's running state to its disk and free its memory; corral up resumes it (qemu only; idle_action = \"save\" does it for --idle)")
	cmd.Flags().BoolVar(&opts.All, "all", false, "stop every box whose VM or broker runs")
	cmd.MarkFlagsMutuallyExclusive("idle", "save", "all")
	return cmd
}

func stopRun(opts *StopOptions) error {
	names := opts.Boxes
	if len(names) == 0 && !opts.Idle && !opts.All {
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
	if opts.All {
		st, err := s.List()
		if err != nil && len(st) == 0 {
			return err
		}
		names = runningBoxes(st)
		if len(names) == 0 {
			fmt.Fprintln(opts.IO.Out, "no running boxes")
			return nil
		}
		// Every box, even after one fails: an uninstall must leave none
		// running from the removed binary.
		var errs []error
		for _, b := range names {
			if err := s.Stop(ctx, b, ""); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintf(opts.IO.Out, "stopped %s\n", b)
		}
		return errors.Join(errs...)
	}
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

// runningBoxes are the boxes `corral stop --all` stops: those whose VM
// runs, whose Lima processes disagree (Broken: a host agent without its
// VM, or the reverse) or whose broker still runs.
func runningBoxes(st []box.Status) []string {
	var out []string
	for _, b := range st {
		if b.State == boxstate.Running || b.State == boxstate.Broken || b.Broker {
			out = append(out, b.Name)
		}
	}
	return out
}
