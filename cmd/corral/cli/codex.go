package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdCodex builds `corral codex`: `corral agent codex`.
func NewCmdCodex(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	return newAgentShortcut(f, runF, "codex", agentShortcut{
		short: "Run OpenAI Codex in the project's box with approvals off",
		long: `Codex brings the project's box up (creating it on first use) and runs
OpenAI's Codex CLI in the project directory inside it, with approvals and
its own sandbox off: the box is the boundary. OPENAI_API_KEY is forwarded
when set (keychain_env, env_from_host or your environment).

The box's golden image installs Codex (pinned in core/pins/npm.txt) when
agent = "codex"; in a terminal it runs in the detachable session "codex".`,
		example: "  corral codex\n  corral codex -- exec 'fix the failing test'\n  corral codex -- --version",
	})
}
