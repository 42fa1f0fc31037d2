package cli

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// gcService is what `corral gc` needs of the lifecycle service.
type gcService interface {
	PlanGC(goldens bool) (box.GCPlan, error)
	GC(ctx context.Context, plan box.GCPlan) ([]box.GCItem, error)
}

var _ gcService = (*box.Service)(nil)

// GCOptions are the options of `corral gc`.
type GCOptions struct {
	IO      *IOStreams
	Service func() (gcService, error)
	DryRun  bool
	Goldens bool
	JSON    bool
}

// NewCmdGC builds `corral gc`.
func NewCmdGC(f *Factory, runF func(*GCOptions) error) *cobra.Command {
	opts := &GCOptions{IO: f.IO, Service: func() (gcService, error) { return f.Service() }}
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove what deleted or half-created boxes left behind",
		Long: `Gc removes Lima instances corral has no record of, box records whose
instance is gone (a box being created is left alone for an hour), brokers
of boxes that are gone, the egress and broker logs of boxes deleted more
than 14 days ago, and the approvals of deleted boxes. With --goldens it
also removes golden images no box was cloned from. Trusted project config
(~/.corral/projects/<box>.toml) is never removed.`,
		Example: "  corral gc --dry-run\n  corral gc\n  corral gc --goldens",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return gcRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.DryRun, "dry-run", "n", false, "list what would be removed, remove nothing")
	cmd.Flags().BoolVar(&opts.Goldens, "goldens", false, "also remove golden images no box uses")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON: the plan (with --dry-run) or what was removed")
	return cmd
}

func gcRun(opts *GCOptions) error {
	s, err := opts.Service()
	if err != nil {
		return err
	}
	plan, err := s.PlanGC(opts.Goldens)
	if err != nil {
		return err
	}
	if plan.Items == nil {
		plan.Items = []box.GCItem{}
	}
	if opts.DryRun {
		if opts.JSON {
			return jsonLine(opts.IO.Out, SchemaGCPlan, plan)
		}
		for _, it := range plan.Items {
			fmt.Fprintf(opts.IO.Out, "would remove %s\n", it)
		}
		if len(plan.Items) == 0 {
			fmt.Fprintln(opts.IO.Out, "nothing to remove")
		}
		printNotes(opts.IO, plan.Notes)
		return nil
	}
	ctx, cancel := signalContext()
	defer cancel()
	done, err := s.GC(ctx, plan)
	if opts.JSON {
		if done == nil {
			done = []box.GCItem{}
		}
		if jerr := jsonLine(opts.IO.Out, SchemaGCDone, map[string]any{"removed": done}); jerr != nil {
			return jerr
		}
	} else {
		for _, it := range done {
			fmt.Fprintf(opts.IO.Out, "removed %s\n", it)
		}
		if len(done) == 0 && err == nil {
			fmt.Fprintln(opts.IO.Out, "nothing to remove")
		}
	}
	printNotes(opts.IO, plan.Notes)
	return err
}

func printNotes(io *IOStreams, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(io.ErrOut, "note: %s\n", n)
	}
}
