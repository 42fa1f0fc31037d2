package cli

import (
	"context"
	"fmt"

	"github.com/corral-dev/corral/core/golden"
	"github.com/spf13/cobra"
)

// goldenRemover is what `corral golden rm` needs of the golden images.
type goldenRemover interface {
	Remove(ctx context.Context, name string, force bool) error
}

var _ goldenRemover = golden.Images{}

// GoldenRmOptions are the options of `corral golden rm`.
type GoldenRmOptions struct {
	IO     *IOStreams
	Images func() (goldenRemover, error)
	Names  []string
	Force  bool
}

// NewCmdGoldenRm builds `corral golden rm`.
func NewCmdGoldenRm(f *Factory, runF func(*GoldenRmOptions) error) *cobra.Command {
	opts := &GoldenRmOptions{IO: f.IO, Images: func() (goldenRemover, error) { return f.goldens() }}
	cmd := &cobra.Command{
		Use: "rm GOLDEN...", Short: "Remove golden images",
		Example: "  corral golden rm golden-4576f2bc1b3e", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Names = args
			if runF != nil {
				return runF(opts)
			}
			return goldenRmRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Force, "force", "f", false, "remove even if boxes were cloned from it")
	return cmd
}

func goldenRmRun(ctx context.Context, opts *GoldenRmOptions) error {
	im, err := opts.Images()
	if err != nil {
		return err
	}
	for _, g := range opts.Names {
		if err := im.Remove(ctx, g, opts.Force); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "removed %s\n", g)
	}
	return nil
}
