package cli

import (
	"github.com/corral-dev/corral/core/agent"
	"github.com/spf13/cobra"
)

// ClaudeOptions are the options of `corral claude`.
type ClaudeOptions struct {
	IO      *IOStreams
	Factory *Factory
	Args    []string
}

// NewCmdClaude builds `corral claude`.
func NewCmdClaude(f *Factory, runF func(*ClaudeOptions) error) *cobra.Command {
	opts := &ClaudeOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:   "claude [-- ARGS...]",
		Short: "Run Claude Code in the project's box with permission prompts off",
		Long: `Claude brings the project's box up (creating it on first use) and runs
Claude Code in the project directory inside it. The box is the boundary:
it mounts only this project and reaches only the hosts you allow.`,
		Example: "  cd ~/src/web && corral claude\n  corral claude -- --continue",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			a, err := agent.Lookup("claude")
			if err != nil {
				return err
			}
			argv := append(append([]string{}, a.Command...), opts.Args...)
			return sessionRun(f, a.Name, argv, opts.IO.InTTY && opts.IO.OutTTY)
		},
	}
}
