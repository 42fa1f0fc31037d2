package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/remote"
	"github.com/spf13/cobra"
)

// HostRmOptions are the options of `corral host rm`.
type HostRmOptions struct {
	IO      *IOStreams
	Factory *Factory
	Name    string
}

// NewCmdHostRm builds `corral host rm NAME`.
func NewCmdHostRm(f *Factory, runF func(*HostRmOptions) error) *cobra.Command {
	opts := &HostRmOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a remote host",
		Long: `Rm removes the host from ~/.corral/hosts.toml. Boxes on it are not touched;
a project whose host key names it refuses to run until the key is changed.`,
		Example: "  corral host rm gpu",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return hostRmRun(opts)
		},
	}
	return cmd
}

func hostRmRun(opts *HostRmOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	if err := remote.Remove(l, opts.Name, audit.ActorCLI); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "host %s removed from %s\n", opts.Name, l.HostsFile())
	return nil
}
