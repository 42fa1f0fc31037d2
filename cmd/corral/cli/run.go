package cli

import (
	"github.com/spf13/cobra"
)

// RunOptions are the options of `corral run`.
type RunOptions struct {
	IO      *IOStreams
	Factory *Factory
	Argv    []string
}

// NewCmdRun builds `corral run`.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:   "run -- CMD [ARGS...]",
		Short: "Run a command in the project's box, passing stdio and the exit code through",
		Long: `Run brings the project's box up and runs CMD in the project directory
inside it. No terminal is needed: stdin, stdout and stderr are passed
through, and corral exits with CMD's exit code.`,
		Example: "  corral run -- make test\n  corral run -- cat README.md",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Argv = args
			if runF != nil {
				return runF(opts)
			}
			return sessionRun(f, "shell", opts.Argv, false)
		},
	}
}
