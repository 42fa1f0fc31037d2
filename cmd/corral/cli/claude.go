package cli

import (
	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// ClaudeOptions are the options of `corral claude`.
type ClaudeOptions struct {
	IO         *IOStreams
	Factory    *Factory
	Args       []string
	Foreground bool
}

// NewCmdClaude builds `corral claude`.
func NewCmdClaude(f *Factory, runF func(*ClaudeOptions) error) *cobra.Command {
	opts := &ClaudeOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "claude [-- ARGS...]",
		Short: "Run Claude Code in the project's box with permission prompts off",
		Long: `Claude brings the project's box up (creating it on first use) and runs
Claude Code in the project directory inside it. The box is the boundary:
it mounts only this project and reaches only the hosts you allow.

In a terminal, Claude Code runs in the box's detachable session "claude":
closing the terminal (or tmux's detach key, ctrl-b d) leaves it working,
and the next corral claude (or corral attach) re-enters it.`,
		Example: "  cd ~/src/web && corral claude\n  corral claude -- --continue\n  corral attach",
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
			tty := opts.IO.InTTY && opts.IO.OutTTY
			// With a terminal the agent runs in the box's detachable session
			// named after it: created on first use, re-attached after.
			// Without one (scripts, pipes) it runs in the foreground.
			mode := box.ModeForeground
			if tty && !opts.Foreground {
				mode = box.ModeOpen
			}
			return sessionRun(f, a.Name, argv, tty, mode, a.Name)
		},
	}
	cmd.Flags().BoolVar(&opts.Foreground, "foreground", false, "run attached to this terminal only, not in a detachable session")
	return cmd
}
