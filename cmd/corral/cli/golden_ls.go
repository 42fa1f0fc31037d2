package cli

import (
	"context"
	"strings"

	"github.com/corral-dev/corral/core/golden"
	"github.com/spf13/cobra"
)

// goldenLister is what `corral golden ls` needs of the golden images.
type goldenLister interface {
	List(ctx context.Context) ([]golden.Golden, error)
}

var _ goldenLister = golden.Images{}

// goldens are the golden images of the lifecycle service's Lima home.
func (f *Factory) goldens() (golden.Images, error) {
	s, err := f.Service()
	if err != nil {
		return golden.Images{}, err
	}
	return s.Goldens(), nil
}

// GoldenLsOptions are the options of `corral golden ls`.
type GoldenLsOptions struct {
	IO     *IOStreams
	Images func() (goldenLister, error)
	JSON   bool
}

// NewCmdGoldenLs builds `corral golden ls`.
func NewCmdGoldenLs(f *Factory, runF func(*GoldenLsOptions) error) *cobra.Command {
	opts := &GoldenLsOptions{IO: f.IO, Images: func() (goldenLister, error) { return f.goldens() }}
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
	im, err := opts.Images()
	if err != nil {
		return err
	}
	gs, err := im.List(ctx)
	if err != nil {
		return err
	}
	if opts.JSON {
		if gs == nil {
			gs = []golden.Golden{}
		}
		return printJSONList(opts.IO.Out, SchemaGoldens, "goldens", gs)
	}
	tw := newTable(opts.IO.Out, opts.IO.OutTTY)
	tw.Row("GOLDEN", "STATUS", "BOXES")
	for _, g := range gs {
		tw.Row(g.Name, g.Status, strings.Join(g.Boxes, ","))
	}
	return tw.Flush()
}
