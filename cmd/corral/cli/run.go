package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// RunOptions are the options of `corral run`.
type RunOptions struct {
	IO      *IOStreams
	Factory *Factory
	Argv    []string
	Detach  bool
	Name    string
}

// NewCmdRun builds `corral run`.
func NewCmdRun(f *Factory, runF func(*RunOptions) error) *cobra.Command {
	opts := &RunOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "run [--detach [--name NAME]] -- CMD [ARGS...]",
		Short: "Run a command in the project's box, passing stdio and the exit code through",
		Long: `Run brings the project's box up and runs CMD in the project directory
inside it. No terminal is needed: stdin, stdout and stderr are passed
through, and corral exits with CMD's exit code.

With --detach, CMD runs in a detachable session in the box instead and
corral prints the session's name and returns: corral attach re-enters it,
corral sessions lists it, and it ends when CMD exits.`,
		Example: "  corral run -- make test\n  corral run -- cat README.md\n  corral run --detach --name tests -- make test-all",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Argv = args
			if opts.Name != "" && !opts.Detach {
				return errors.New("--name needs --detach")
			}
			if opts.Name != "" {
				if err := box.CheckSessionName(opts.Name); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Detach {
				name := opts.Name
				if name == "" {
					name = newRunName()
				}
				return sessionRun(f, "shell", box.SessionOptions{Argv: opts.Argv, Mode: box.ModeNew, Name: name})
			}
			return sessionRun(f, "shell", box.SessionOptions{Argv: opts.Argv})
		},
	}
	cmd.Flags().BoolVarP(&opts.Detach, "detach", "d", false, "run in a detachable session in the box and return (corral attach re-enters it)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the detached session's `name` (default run-<random>)")
	return cmd
}

// newRunName names a detached run: run-<6 hex>.
func newRunName() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return "run-" + hex.EncodeToString(b)
}
