package cli

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// goldenLister is what `corral golden ls` needs of the lifecycle service.
type goldenLister interface {
	Goldens(ctx context.Context) ([]box.Golden, error)
}

var _ goldenLister = (*box.Service)(nil)

// GoldenLsOptions are the options of `corral golden ls`.
type GoldenLsOptions struct {
	IO      *IOStreams
	Service func() (goldenLister, error)
	JSON    bool
}

// NewCmdGoldenLs builds `corral golden ls`.
func NewCmdGoldenLs(f *Factory, runF func(*GoldenLsOptions) error) *cobra.Command {
	opts := &GoldenLsOptions{IO: f.IO, Service: func() (goldenLister, error) { return f.Service() }}
	cmd := &cobra.Command{
		Use: "ls", Short: "List golden images and the boxes cloned from them",
		Example: "  corral golden ls --json", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return goldenLsRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func goldenLsRun(ctx context.Context, opts *GoldenLsOptions) error {
	s, err := opts.Service()
	if err != nil {
		return err
	}
	gs, err := s.Goldens(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		if gs == nil {
			gs = []box.Golden{}
		}
		return printJSON(opts.IO.Out, gs)
	}
	tw := newTable(opts.IO.Out, opts.IO.OutTTY)
	tw.Row("GOLDEN", "STATUS", "BOXES")
	for _, g := range gs {
		tw.Row(g.Name, g.Status, strings.Join(g.Boxes, ","))
	}
	return tw.Flush()
}
