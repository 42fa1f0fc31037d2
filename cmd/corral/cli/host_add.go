package cli

import (
	"fmt"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/remote"
	"github.com/spf13/cobra"
)

// HostAddOptions are the options of `corral host add`.
type HostAddOptions struct {
	IO        *IOStreams
	Factory   *Factory
	Name, URL string
	Corral    string
	SSHConfig string
	Force     bool
}

// NewCmdHostAdd builds `corral host add NAME URL`.
func NewCmdHostAdd(f *Factory, runF func(*HostAddOptions) error) *cobra.Command {
	opts := &HostAddOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "add NAME ssh://[USER@]HOST[:PORT]",
		Short: "Add a remote host",
		Long: `Add records a remote host in ~/.corral/hosts.toml. NAME is a lowercase
letter, then lowercase letters, digits and '-' (at most 32; "local" means
this machine). The URL is ssh://[USER@]HOST[:PORT] and nothing else: no
path, password or options. Nothing is contacted: check the host with
corral --host NAME version.`,
		Example: `  corral host add gpu ssh://me@gpu.internal
  corral host add big ssh://me@10.0.0.7:2222 --corral /opt/corral/bin/corral`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.URL = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return hostAddRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Corral, "corral", "", "the corral binary on the host, an absolute `path` (default: corral from the remote PATH)")
	cmd.Flags().StringVar(&opts.SSHConfig, "ssh-config", "", "an ssh client config `file` on this machine for this host (ssh -F)")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace a host of the same name")
	return cmd
}

func hostAddRun(opts *HostAddOptions) error {
	h, err := remote.NewHost(opts.Name, opts.URL, opts.Corral, opts.SSHConfig)
	if err != nil {
		return fmt.Errorf("adding host: %w", err)
	}
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	if err := remote.Add(l, h, opts.Force, audit.ActorCLI); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "host %s: %s added to %s\n", h.Name, h.URL, l.HostsFile())
	return nil
}
