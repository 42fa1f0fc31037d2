package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// AgentOptions are the options of `corral agent NAME` and of the
// commands named after a built-in agent (`corral claude`, `corral codex`,
// `corral gemini`).
type AgentOptions struct {
	IO         *IOStreams
	Factory    *Factory
	Name       string // the agent (core/agent registry)
	Args       []string
	Foreground bool
}

// NewCmdAgent builds `corral agent NAME [-- ARGS...]`.
func NewCmdAgent(f *Factory, runF func(*AgentOptions) error) *cobra.Command {
	opts := &AgentOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "agent NAME [-- ARGS...]",
		Short: "Run an agent in the project's box",
		Long: `Agent brings the project's box up (creating it on first use) and runs the
agent NAME in the project directory inside it, like corral claude: a
built-in agent (claude, codex, gemini, shell) or one defined under
[agents.NAME] in your config. corral agents lists them.

The box installs, seeds and allows the hosts of its own agent (the agent
key); another agent runs only if its command exists in the box, and its
hosts are not allowed until you allow them.`,
		Example: "  corral agent codex\n  corral agent aider -- --model sonnet\n  corral agents",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Args = args[0], args[1:]
			if runF != nil {
				return runF(opts)
			}
			return agentRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Foreground, "foreground", false, "run attached to this terminal only, not in a detachable session")
	return cmd
}

// agentShortcut is the help of a command named after a built-in agent.
type agentShortcut struct{ short, long, example string }

// newAgentShortcut builds `corral NAME [-- ARGS...]`, which is `corral
// agent NAME`: only the help differs between claude, codex and gemini.
func newAgentShortcut(f *Factory, runF func(*AgentOptions) error, name string, help agentShortcut) *cobra.Command {
	opts := &AgentOptions{IO: f.IO, Factory: f, Name: name}
	cmd := &cobra.Command{
		Use:     name + " [-- ARGS...]",
		Short:   help.short,
		Long:    help.long,
		Example: help.example,
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

// agentRun runs opts.Name in the box. With a terminal the agent runs in
// the box's detachable session named after it (created on first use,
// re-attached after); without one (scripts, pipes) in the foreground.
func agentRun(opts *AgentOptions) error {
	f := opts.Factory
	if !agent.ValidName(opts.Name) {
		return fmt.Errorf("agent %q: not an agent name", opts.Name)
	}
	tty := opts.IO.InTTY && opts.IO.OutTTY
	mode := box.ModeForeground
	if tty && !opts.Foreground {
		mode = box.ModeOpen
	}
	return sessionRun(f, opts.Name, box.SessionOptions{Argv: opts.Args, AgentCommand: true, TTY: tty, Mode: mode, Name: opts.Name})
}
