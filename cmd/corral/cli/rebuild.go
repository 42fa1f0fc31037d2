package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/spf13/cobra"
)

// RebuildOptions are the options of `corral rebuild`.
type RebuildOptions struct {
	IO       *IOStreams
	Factory  *Factory
	NoGolden bool
}

// NewCmdRebuild builds `corral rebuild`.
func NewCmdRebuild(f *Factory, runF func(*RebuildOptions) error) *cobra.Command {
	opts := &RebuildOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "rebuild",
		Short: "Recreate the project's box from its current config",
		Long: `Rebuild removes the project's box and creates it again from the current
config. The trusted per-box config and approvals live outside the box and
are kept; anything stored only inside the box is lost.`,
		Example: "  corral rebuild -C ~/src/web",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			r, err := f.Resolve(config.Config{})
			if err != nil {
				return err
			}
			s, err := f.Service()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			m, err := s.Rebuild(ctx, r, box.UpOptions{NoGolden: opts.NoGolden})
			if err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.Out, "box %s rebuilt and running\n", m.Name)
			return nil
		},
	}
	cmd.Flags().BoolVar(&opts.NoGolden, "no-golden", false, "create with a plain limactl create")
	return cmd
}
