package cli

import (
	"github.com/corral-dev/corral/core/remote"
	"github.com/spf13/cobra"
)

// HostLsOptions are the options of `corral host ls`.
type HostLsOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
}

// NewCmdHostLs builds `corral host ls`.
func NewCmdHostLs(f *Factory, runF func(*HostLsOptions) error) *cobra.Command {
	opts := &HostLsOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List the remote hosts",
		Example: "  corral host ls\n  corral host ls --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return hostLsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func hostLsRun(opts *HostLsOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	hosts, err := remote.Load(l.HostsFile())
	if err != nil {
		return err
	}
	if opts.JSON {
		if hosts == nil {
			hosts = []remote.Host{}
		}
		return printJSONList(opts.IO.Out, SchemaHosts, "hosts", hosts)
	}
	t := newTable(opts.IO.Out, opts.IO.OutTTY)
	if opts.IO.OutTTY {
		t.Row("NAME", "URL", "CORRAL", "SSH CONFIG")
	}
	for _, h := range hosts {
		t.Row(h.Name, h.URL, orDefault(h.Corral, "corral"), orDefault(h.SSHConfig, "-"))
	}
	return t.Flush()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
