package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdGemini builds `corral gemini`: `corral agent gemini`.
func NewCmdGemini(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	return newAgentShortcut(f, runF, "gemini", agentShortcut{
		short: "Run Gemini CLI in the project's box with approvals off",
		long: `Gemini brings the project's box up (creating it on first use) and runs
Google's Gemini CLI in the project directory inside it, with approvals off
(--yolo) and the project trusted (GEMINI_CLI_TRUST_WORKSPACE=true, so no
folder-trust prompt and gemini -p runs): the box is the boundary.
GEMINI_API_KEY is forwarded when set.

The box's golden image installs Gemini CLI and the Node it needs (both
pinned in core/pins/npm.txt) when agent = "gemini"; in a terminal it runs
in the detachable session "gemini".`,
		example: "  corral gemini\n  corral gemini -- -p 'explain main.go'\n  corral gemini -- --version",
	})
}
