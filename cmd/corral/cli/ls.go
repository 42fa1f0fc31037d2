package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/spf13/cobra"
)

// LsOptions are the options of `corral ls`.
type LsOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
}

// NewCmdLs builds `corral ls`.
func NewCmdLs(f *Factory, runF func(*LsOptions) error) *cobra.Command {
	opts := &LsOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List boxes with state, host memory and idle time",
		Example: "  corral ls\n  corral ls --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return lsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func lsRun(opts *LsOptions) error {
	s, err := service(opts.Factory)
	if err != nil {
		return err
	}
	list, err := s.List()
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", err)
	}
	if opts.JSON {
		if list == nil {
			list = []box.Status{}
		}
		enc := json.NewEncoder(opts.IO.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BOX\tSTATE\tMEMORY\tCPUS\tIDLE\tSESSIONS\tNETWORK\tPROJECT")
	for _, st := range list {
		mem := "-"
		if st.MemBytes > 0 {
			mem = config.FormatSize(st.MemBytes)
		}
		mem += " / " + config.FormatSize(st.MemoryCap)
		idle := "-"
		if st.Live == 0 && st.Idle > 0 {
			idle = st.Idle.Round(time.Minute).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\n", st.Name, st.State, mem, st.CPUs, idle, st.Live, st.Network, st.Project)
	}
	return tw.Flush()
}
