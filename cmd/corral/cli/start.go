package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

// StartOptions are the options of `corral start`.
type StartOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
}

// NewCmdStart builds `corral start`.
func NewCmdStart(f *Factory, runF func(*StartOptions) error) *cobra.Command {
	opts := &StartOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:     "start [BOX]",
		Short:   "Start an existing box and its broker",
		Example: "  corral start web-3f2a1c",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := boxArg(f, args)
			if err != nil {
				return err
			}
			opts.Box = b
			if runF != nil {
				return runF(opts)
			}
			s, err := f.Service()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			if err := s.Start(ctx, opts.Box); err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.Out, "box %s is running\n", opts.Box)
			return nil
		},
	}
}
