package cli

import (
	"github.com/spf13/cobra"
)

// NewCmdGemini builds `corral gemini`: `corral agent gemini`.
func NewCmdGemini(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	opts := &AgentOptions{IO: f.IO, Factory: f, Name: "gemini"}
	cmd := &cobra.Command{
		Use:   "gemini [-- ARGS...]",
		Short: "Run Gemini CLI in the project's box with approvals off",
		Long: `Gemini brings the project's box up (creating it on first use) and runs
Google's Gemini CLI in the project directory inside it, with approvals off
(--yolo): the box is the boundary. GEMINI_API_KEY is forwarded when set.

The box's golden image installs Gemini CLI and the Node it needs (both
pinned in core/pins/npm.txt) when agent = "gemini"; in a terminal it runs
in the detachable session "gemini".`,
		Example: "  corral gemini\n  corral gemini -- -p 'explain main.go'\n  corral gemini -- --version",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Args = args
			if runF != nil {
				return runF(opts)
			}
			return agentRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Foreground, "foreground", false, "run attached to this terminal only, not in a detachable session")
	return cmd
}
