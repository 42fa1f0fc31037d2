package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/spf13/cobra"
)

// UpOptions are the options of `corral up`.
type UpOptions struct {
	IO       *IOStreams
	Factory  *Factory
	NoGolden bool
	Force    bool
	Learn    bool
}

// NewCmdUp builds `corral up`.
func NewCmdUp(f *Factory, runF func(*UpOptions) error) *cobra.Command {
	opts := &UpOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Create the project's box if needed and start it",
		Long: `Up creates the project's box if needed (from a golden image) and starts
it and its egress broker.

--learn starts a learning window of learn_for (default 30m) once the box
runs: its broker also allows public destinations that are not on the
allow-list (private and special-purpose addresses stay refused) and logs
them; corral egress learn BOX then proposes an allow-list from them, and
--apply writes it and ends the learning. When the time is up the broker
enforces the allow-list again.`,
		Example: "  corral up\n  corral up -C ~/src/web --no-golden\n  corral up --learn",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return upRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.NoGolden, "no-golden", false, "create with a plain limactl create instead of cloning a golden image")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "start even if running boxes' memory caps would exceed the host's RAM")
	cmd.Flags().BoolVar(&opts.Learn, "learn", false, "learn for learn_for (default 30m): allow and log public hosts off the allow-list")
	return cmd
}

func upRun(opts *UpOptions) error {
	r, err := opts.Factory.Resolve(config.Config{})
	if err != nil {
		return err
	}
	s, err := opts.Factory.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	m, err := s.Up(ctx, r, box.UpOptions{NoGolden: opts.NoGolden, Force: opts.Force, Learn: opts.Learn})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "box %s is running (%s)\n", m.Name, m.Project)
	return nil
}
