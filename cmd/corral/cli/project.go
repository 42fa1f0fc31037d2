package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/spf13/cobra"
)

// NewCmdProject builds the hidden `corral project`: the host's end of
// moving a project between two machines. Another machine's corral runs
// its subcommands over ssh (with --host local), stdin and stdout carrying
// the exchange (core/hostgit's branch streams, docs/REMOTE.md); errors go
// to stderr as for any command, where that machine reads them.
func NewCmdProject(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:    "project",
		Short:  "The host's end of a project sent to it over ssh (run by corral --host)",
		Hidden: true,
	}
	cmd.AddCommand(NewCmdProjectReceive(f, nil), NewCmdProjectPullBundle(f, nil))
	return cmd
}

// ProjectOptions are the options of `corral project receive|pull-bundle`.
type ProjectOptions struct {
	Factory *Factory
	Box     string
	// AllowSubmodules is pull-bundle's --allow-submodules: the host's own
	// pull takes them (the other machine asked for them too).
	AllowSubmodules bool
}

// NewCmdProjectReceive builds the hidden `corral project receive BOX`.
func NewCmdProjectReceive(f *Factory, runF func(*ProjectOptions) error) *cobra.Command {
	opts := &ProjectOptions{Factory: f}
	return &cobra.Command{
		Use:    "receive BOX",
		Short:  "Take a project another machine sends on stdin into this host's clone of it",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Box = args[0]
			if runF != nil {
				return runF(opts)
			}
			return projectReceiveRun(opts)
		},
	}
}

func projectReceiveRun(opts *ProjectOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	in, out, _ := f.IO.Terminal()
	ctx, cancel := signalContext()
	defer cancel()
	_, err = f.remoteMover(l).Receive(ctx, opts.Box, in, out)
	return err
}

// projectService is what `corral project pull-bundle` needs of the
// lifecycle service.
type projectService interface {
	pullService
	PullBundle(ctx context.Context, box string, haves []string, out io.Writer) error
}

var _ projectService = (*box.Service)(nil)

// NewCmdProjectPullBundle builds the hidden `corral project pull-bundle BOX`.
func NewCmdProjectPullBundle(f *Factory, runF func(*ProjectOptions) error) *cobra.Command {
	opts := &ProjectOptions{Factory: f}
	cmd := &cobra.Command{
		Use:    "pull-bundle BOX",
		Short:  "Pull from a box here, then send its branches to the machine that asked, on stdout",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Box = args[0]
			if runF != nil {
				return runF(opts)
			}
			return projectPullBundleRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AllowSubmodules, "allow-submodules", false, "take commits that add or change submodules (corral --host NAME pull --allow-submodules)")
	return cmd
}

// projectPullBundleRun reads what the other machine has (stdin), pulls
// from the box as `corral pull` does (starting it if needed), and writes
// the box's branches to stdout.
func projectPullBundleRun(opts *ProjectOptions) error {
	f := opts.Factory
	in, out, _ := f.IO.Terminal()
	haves, err := hostgit.ReadHaves(bufio.NewReader(in))
	if err != nil {
		return fmt.Errorf("sending the branches of box %s: %w", opts.Box, err)
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	var svc projectService = s
	ctx, cancel := signalContext()
	defer cancel()
	if _, err := pullBox(ctx, svc, opts.Box, box.PullOptions{AllowSubmodules: opts.AllowSubmodules}, f.IO.ErrOut); err != nil {
		return err
	}
	return svc.PullBundle(ctx, opts.Box, haves, out)
}
