package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/gitwatch"
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
	// Pending reads a box's repository requests not granted, pending and
	// refused (boxmeta.OpenRequestsErr), with the error when its config
	// does not load; nil reads none.
	Pending func(boxName, project string) (boxmeta.OpenRequests, error)
	// Appeared reads what the box's broker saw appear in its work tree
	// (gitwatch.Read); nil reads nothing.
	Appeared func(boxName string) []gitwatch.Seen
	JSON     bool
}

// NewCmdLs builds `corral ls`.
func NewCmdLs(f *Factory, runF func(*LsOptions) error) *cobra.Command {
	opts := &LsOptions{IO: f.IO, Service: func() (boxLister, error) { return f.Service() },
		Appeared: func(boxName string) []gitwatch.Seen {
			if f.Layout == nil {
				return nil
			}
			l, err := f.Layout()
			if err != nil {
				return nil
			}
			seen, _ := gitwatch.Read(l, boxName)
			return seen
		},
		Pending: func(boxName, project string) (boxmeta.OpenRequests, error) {
			if f.Layout == nil {
				return boxmeta.OpenRequests{}, nil
			}
			l, err := f.Layout()
			if err != nil {
				return boxmeta.OpenRequests{}, nil
			}
			return boxmeta.OpenRequestsErr(l, boxName, project)
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
		boxes := []lsBox{}
		for _, st := range list {
			open, err := pending(opts, st)
			boxes = append(boxes, lsBox{Status: st, Requests: lsRequests{Pending: len(open.Pending), Refused: len(open.Refused), Unknown: err != nil}, GitAppeared: appeared(opts, st.Name)})
		}
		return printJSONList(opts.IO.Out, SchemaBoxes, "boxes", boxes)
	}
	tw := newTable(opts.IO.Out, opts.IO.OutTTY)
	tw.Row("BOX", "STATE", "MEMORY", "CPUS", "IDLE", "SESSIONS", "NETWORK", "PORTS", "PROJECT")
	var asking, failed []string
	for _, st := range list {
		name := st.Name
		open, perr := pending(opts, st)
		n := len(open.Pending)
		if perr != nil {
			// The requests are unknown, not none: say so (on stderr; the
			// exit status stays 0, as for a box whose state is unknown).
			warnLines(opts.IO.ErrOut, fmt.Sprintf("warning: box %s: its config does not load, so what its repository requests is unknown:", display.Text(st.Name, 0)), perr)
		}
		if n > 0 {
			name += "*"
			asking = append(asking, fmt.Sprintf("* %s: its repository requests %d host(s), port(s) or toolchain(s); review with corral approve %s", display.Text(st.Name, 0), n, display.Text(st.Name, 0)))
		}
		if r := len(open.Refused); r > 0 {
			name += "!"
			asking = append(asking, fmt.Sprintf("! %s: its repository requests %d entr(ies) the grant check refuses: never allowed; corral config check -C %s says why", display.Text(st.Name, 0), r, shellArg(display.Text(st.Project, maxCell))))
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
		if st.Shown() == boxstate.Saved && st.Saved.Reason == boxmeta.SavedLowMemory {
			// Why a box the user did not save is saved (the low-memory rule).
			failed = append(failed, fmt.Sprintf("  %s: saved at %s because the host ran short of memory (save_when_free_below); corral up %s resumes it",
				display.Text(st.Name, 0), st.Saved.At.Local().Format("15:04"), display.Text(st.Name, 0)))
		}
		failed = append(failed, appearedLines(st.Name, appeared(opts, st.Name))...)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range append(failed, asking...) {
		fmt.Fprintln(opts.IO.Out, a)
	}
	return nil
}

func appeared(opts *LsOptions, box string) []gitwatch.Seen {
	if opts.Appeared == nil {
		return nil
	}
	return opts.Appeared(box)
}

func pending(opts *LsOptions, st box.Status) (boxmeta.OpenRequests, error) {
	if opts.Pending == nil {
		return boxmeta.OpenRequests{}, nil
	}
	return opts.Pending(st.Name, st.Project)
}

// appearedLines are the lines under the table for the repository entries
// the box's broker saw appear in its work tree since it started
// (core/gitwatch: where the host cannot refuse them): at most three, then
// a count.
func appearedLines(box string, seen []gitwatch.Seen) []string {
	var out []string
	for i, x := range seen {
		if i == 3 {
			out = append(out, fmt.Sprintf("! %s: and %d more (corral doctor %s)", display.Text(box, 0), len(seen)-3, display.Text(box, 0)))
			break
		}
		out = append(out, fmt.Sprintf("! %s: a repository entry appeared in the work tree: %s (host git run there would use its config; remove it if you did not make it)", display.Text(box, 0), display.Text(x.Path, maxCell)))
	}
	return out
}

// lsBox is one box of ls --json: its status and, beside it, how many of
// its repository's requests wait for approval and how many are refused
// (a verdict); RequestsUnknown when its config does not load.
type lsBox struct {
	box.Status
	Requests lsRequests `json:"requests"`
	// GitAppeared are the repository entries the box's broker saw appear
	// in its work tree since it started (core/gitwatch).
	GitAppeared []gitwatch.Seen `json:"git_appeared,omitempty"`
}

type lsRequests struct {
	Pending int  `json:"pending"`
	Refused int  `json:"refused"`
	Unknown bool `json:"unknown,omitempty"`
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
