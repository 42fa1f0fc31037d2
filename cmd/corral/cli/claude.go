package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdClaude builds `corral claude`: `corral agent claude`.
func NewCmdClaude(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	return newAgentShortcut(f, runF, "claude", agentShortcut{
		short: "Run Claude Code in the project's box with permission prompts off",
		long: `Claude brings the project's box up (creating it on first use) and runs
Claude Code in the project directory inside it. The box is the boundary:
it mounts only this project and reaches only the hosts you allow.

In a terminal, Claude Code runs in the box's detachable session "claude":
closing the terminal (or tmux's detach key, ctrl-b d) leaves it working,
and the next corral claude (or corral attach) re-enters it.`,
		example: "  cd ~/src/web && corral claude\n  corral claude -- --continue\n  corral attach",
	})
}
