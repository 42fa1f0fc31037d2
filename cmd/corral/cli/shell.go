package cli

import (
	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// ShellOptions are the options of `corral shell`.
type ShellOptions struct {
	IO      *IOStreams
	Factory *Factory
}

// NewCmdShell builds `corral shell`.
func NewCmdShell(f *Factory, runF func(*ShellOptions) error) *cobra.Command {
	opts := &ShellOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:     "shell",
		Short:   "Open a login shell in the project's box",
		Example: "  corral shell\n  corral shell -C ~/src/web",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return sessionRun(f, "shell", box.SessionOptions{TTY: opts.IO.InTTY && opts.IO.OutTTY})
		},
	}
}
