package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/spf13/cobra"
)

// boxLister is what `corral ls` needs of the lifecycle service.
type boxLister interface {
	List() ([]box.Status, error)
}

var _ boxLister = (*box.Service)(nil)

// LsOptions are the options of `corral ls`.
type LsOptions struct {
	IO      *IOStreams
	Service func() (boxLister, error)
	// Pending counts a box's pending repository requests
	// (boxmeta.PendingRequestsErr), with the error when its config does not
	// load; nil counts none.
	Pending func(boxName, project string) (int, error)
	JSON    bool
}

// NewCmdLs builds `corral ls`.
func NewCmdLs(f *Factory, runF func(*LsOptions) error) *cobra.Command {
	opts := &LsOptions{IO: f.IO, Service: func() (boxLister, error) { return f.Service() },
		Pending: func(boxName, project string) (int, error) {
			if f.Layout == nil {
				return 0, nil
			}
			l, err := f.Layout()
			if err != nil {
				return 0, nil
			}
			p, err := boxmeta.PendingRequestsErr(l, boxName, project)
			return len(p), err
		}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List boxes with state, host memory and idle time",
		Long: `Ls lists every box of this machine: its state, host memory now and its
cap, CPUs, idle time, live sessions, network mode (learning while a
learning window is open), forwarded ports and project.

Under the table, a box whose last boot's provisioning failed (state
Failed) is named with the step that failed ("!"), and a box whose
repository requests hosts, ports or toolchains you have not approved is
marked "*" with the command to review them. --json prints the same
records, provision_error included.`,
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
	s, err := opts.Service()
	if err != nil {
		return err
	}
	list, err := s.List()
	if err := warnMeta(opts.IO.ErrOut, err); err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %s\n", displayLines(err.Error()))
	}
	if opts.JSON {
		if list == nil {
			list = []box.Status{}
		}
		return printJSON(opts.IO.Out, list)
	}
	tw := newTable(opts.IO.Out, opts.IO.OutTTY)
	tw.Row("BOX", "STATE", "MEMORY", "CPUS", "IDLE", "SESSIONS", "NETWORK", "PORTS", "PROJECT")
	var asking, failed []string
	for _, st := range list {
		name := st.Name
		n, perr := pending(opts, st)
		if perr != nil {
			// The requests are unknown, not none: say so (on stderr; the
			// exit status stays 0, as for a box whose state is unknown).
			warnLines(opts.IO.ErrOut, fmt.Sprintf("warning: box %s: its config does not load, so what its repository requests is unknown:", display.Text(st.Name, 0)), perr)
		}
		if n > 0 {
			name += "*"
			asking = append(asking, fmt.Sprintf("* %s: its repository requests %d host(s), port(s) or toolchain(s); review with corral approve %s", display.Text(st.Name, 0), n, display.Text(st.Name, 0)))
		}
		mem := "-"
		if st.MemBytes > 0 {
			mem = config.FormatSize(st.MemBytes)
		}
		mem += " / " + config.FormatSize(st.MemoryCap)
		idle := "-"
		if st.Live == 0 && st.Idle > 0 {
			idle = st.Idle.Round(time.Minute).String()
		}
		network := string(st.Network)
		if !st.LearningUntil.IsZero() {
			network = "learning"
		}
		tw.Row(name, st.Shown(), mem, st.CPUs, idle, st.Live, network, portsText(st.Ports), st.Project)
		if st.ProvisionError != "" {
			// The step that failed, under the table: a Failed state alone
			// does not say what to fix.
			failed = append(failed, fmt.Sprintf("! %s: %s (corral up %s says where its boot log is)", display.Text(st.Name, 0), display.Text(st.ProvisionError, 0), display.Text(st.Name, 0)))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range append(failed, asking...) {
		fmt.Fprintln(opts.IO.Out, a)
	}
	return nil
}

func pending(opts *LsOptions, st box.Status) (int, error) {
	if opts.Pending == nil {
		return 0, nil
	}
	return opts.Pending(st.Name, st.Project)
}

// portsText shows a box's forwarded ports as their entries ("3000,8080:80",
// each on the host's 127.0.0.1), or "-".
func portsText(ps []config.Port) string {
	if len(ps) == 0 {
		return "-"
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}
