// Package cli is the corral command tree. Each command lives in its own
// file with an options struct, a NewCmd function that parses, and a run
// function that makes one call into core.
package cli

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/secret"
	"github.com/spf13/cobra"
)

// Main runs the CLI with args and returns the exit code.
func Main(argv []string, app AppFunc) int {
	args := LaunchArgs(argv)
	f := &Factory{
		App:        app,
		IO:         System(),
		Layout:     paths.Default,
		Executable: os.Executable,
		LookupEnv:  os.LookupEnv,
	}
	f.SecretStore = secret.Default
	return Run(f, args)
}

// LaunchArgs returns the arguments cobra should parse for argv (argv[0]
// included). LaunchServices adds a -psn_0_NNNN argument when it starts a
// quarantined app for the first time (the cask installs Corral quarantined);
// it is dropped before anything looks at the arguments. Finder, `open -a
// Corral` and login items start Corral.app/Contents/MacOS/corral with no
// other arguments: that is the app.
func LaunchArgs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	args := make([]string, 0, len(argv)-1)
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-psn_") {
			args = append(args, a)
		}
	}
	if len(args) == 0 && strings.Contains(argv[0], ".app/Contents/MacOS/") {
		args = append(args, "app")
	}
	return args
}

// Run executes args against a factory; tests call it in-process.
func Run(f *Factory, args []string) int {
	f.args = args
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(f.IO.In)
	root.SetOut(f.IO.Out)
	root.SetErr(f.IO.ErrOut)
	cmd, err := root.ExecuteC()
	if err != nil && cmd == root {
		// The root runs nothing itself: its error is an unknown command.
		err = &usageError{err}
	}
	if err != nil {
		if jsonRequested(cmd, args) {
			printErrorJSON(f.IO.ErrOut, err)
		} else {
			printError(f.IO.ErrOut, err)
		}
	}
	f.IO.Flush()
	return exitCode(err)
}

// NewCmdRoot builds the command tree.
func NewCmdRoot(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "corral",
		Short: "Run coding agents in a per-project Lima VM",
		Long: `corral gives each project its own Lima VM (a box). The box mounts only
that project, runs the agent with permission prompts off, and reaches only
the hosts the host side allows.`,
		Example: `  cd ~/src/web && corral claude
  corral config check -C ~/src/untrusted
  corral render`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			level := slog.LevelWarn
			if f.Verbose {
				level = slog.LevelDebug
			}
			if f.Logger == nil {
				f.Logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level}))
			}
			sweepIdle(f, cmd)
		},
	}
	root.PersistentFlags().StringVarP(&f.Dir, "dir", "C", "", "project `directory` (default: the working directory)")
	root.PersistentFlags().BoolVarP(&f.Verbose, "verbose", "v", false, "log what corral does to stderr")
	root.PersistentFlags().StringVar(&f.Host, "host", "", "run a box command on this remote `host` (corral host ls; \"local\": this machine)")
	// Set by a laptop's corral on the command it runs here over ssh, never
	// by hand: where its credential relay is forwarded, and its token.
	root.PersistentFlags().StringVar(&f.RelaySocket, strings.TrimPrefix(remote.RelayFlag, "--"), "", "the laptop's credential relay `socket` (set by corral --host)")
	root.PersistentFlags().StringVar(&f.RelayToken, strings.TrimPrefix(remote.RelayTokenFlag, "--"), "", "the laptop's credential relay `token` (set by corral --host)")
	_ = root.PersistentFlags().MarkHidden(strings.TrimPrefix(remote.RelayFlag, "--"))
	_ = root.PersistentFlags().MarkHidden(strings.TrimPrefix(remote.RelayTokenFlag, "--"))
	root.AddCommand(
		NewCmdConfig(f),
		NewCmdUp(f, nil),
		NewCmdStart(f, nil),
		NewCmdStop(f, nil),
		NewCmdRm(f, nil),
		NewCmdLs(f, nil),
		NewCmdInfo(f, nil),
		NewCmdRebuild(f, nil),
		NewCmdRun(f, nil),
		NewCmdShell(f, nil),
		NewCmdClaude(f, nil),
		NewCmdCodex(f, nil),
		NewCmdGemini(f, nil),
		NewCmdAgent(f, nil),
		NewCmdAgents(f, nil),
		NewCmdPort(f, nil),
		NewCmdAttach(f, nil),
		NewCmdSessions(f, nil),
		NewCmdApp(f, nil),
		NewCmdGolden(f),
		NewCmdRender(f, nil),
		NewCmdBroker(f, nil),
		NewCmdGuestConn(f, nil),
		NewCmdHostConn(f, nil),
		NewCmdAllow(f, nil),
		NewCmdDeny(f, nil),
		NewCmdApprove(f, nil),
		NewCmdEgress(f, nil),
		NewCmdSecret(f),
		NewCmdVersion(f, nil),
		NewCmdSnapshot(f, nil),
		NewCmdDoctor(f, nil),
		NewCmdGC(f, nil),
		NewCmdAudit(f, nil),
		NewCmdReview(f, nil),
		NewCmdPull(f, nil),
		NewCmdHost(f),
		NewCmdProject(f),
	)
	// completion is cobra's own group; made now so that the walk below
	// covers it too.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.Example = "  corral completion bash > ~/.local/share/bash-completion/completions/corral"
			for _, sh := range c.Commands() {
				sh.Example = "  corral completion " + sh.Name()
			}
		}
	}
	strictGroups(root)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	forwardRemote(f, root)
	return root
}

// strictGroups makes every group command (one with subcommands and no
// action of its own: config, golden, snapshot, secret, completion) fail on
// an unknown subcommand. cobra would print the group's help and exit 0, so
// a mistyped `corral secret rm` in a script would look like success.
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
	if c == c.Root() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.SuggestionsMinimumDistance = 2
	c.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			return &usageError{hint.New(err, fmt.Sprintf("did you mean %s %s?", cmd.CommandPath(), s[0]))}
		}
		return &usageError{hint.New(err, fmt.Sprintf("see %s --help", cmd.CommandPath()))}
	}
}

// jsonRequested says whether the command that ran (or failed to parse)
// was asked for --json: its error is then one JSON object on stderr. A
// literal --json before "--" counts too (a flag error stops parsing before
// --json is read; a command without the flag, or an unknown one, was still
// asked for JSON by a script).
func jsonRequested(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if fl := cmd.Flags().Lookup("json"); fl != nil && fl.Changed {
			return fl.Value.String() == "true"
		}
	}
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "--json", "--json=true":
			return true
		}
	}
	return false
}
