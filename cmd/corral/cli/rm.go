package cli

import (
	"context"

	"fmt"

	"github.com/corral-dev/corral/core/box"

	"github.com/spf13/cobra"
)

// RmOptions are the options of `corral rm`.
type RmOptions struct {
	IO      *IOStreams
	Factory *Factory
	Boxes   []string
	Force   bool
}

// NewCmdRm builds `corral rm`.
func NewCmdRm(f *Factory, runF func(*RmOptions) error) *cobra.Command {
	opts := &RmOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:     "rm [BOX...]",
		Short:   "Remove boxes: their VM, broker and metadata",
		Example: "  corral rm web-3f2a1c\n  corral rm -f",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Boxes = args
			if runF != nil {
				return runF(opts)
			}
			return rmRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Force, "force", "f", false, "remove running boxes too")
	return cmd
}

func rmRun(opts *RmOptions) error {
	return eachBox(opts.Factory, opts.Boxes, func(ctx context.Context, s *box.Service, b string) error {
		if err := s.Remove(ctx, b, opts.Force); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "removed %s\n", b)
		return nil
	})
}
