package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/spf13/cobra"
)

// EgressLearnOptions are the options of `corral egress learn`.
type EgressLearnOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
	Apply   bool
	Stop    bool
	JSON    bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewCmdEgressLearn builds `corral egress learn`.
func NewCmdEgressLearn(f *Factory, runF func(*EgressLearnOptions) error) *cobra.Command {
	opts := &EgressLearnOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "learn [BOX]",
		Short: "Propose an allow-list from what a learning box reached, and apply it",
		Long: `Learn shows what a box reached while it was learning (corral up --learn,
or network = "learn"): every destination its broker allowed only because it
was learning, grouped by registrable domain, with how often and during
which sessions. That is the proposed allow-list.

--apply adds the proposal to the box's trusted layer
(~/.corral/projects/<box>.toml, egress = [...], with a comment saying when
it was learned) and ends the learning: the broker enforces the allow-list
again at once. --stop ends the learning without writing anything.`,
		Example: `  corral egress learn
  corral egress learn web-3f2a1c --apply
  corral egress learn --stop --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Box = args[0]
			}
			if opts.Apply && opts.Stop {
				return errors.New("egress learn: --apply and --stop: choose one (--apply also ends learning)")
			}
			if runF != nil {
				return runF(opts)
			}
			return egressLearnRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Apply, "apply", false, "write the proposal to the trusted layer and end learning")
	cmd.Flags().BoolVar(&opts.Stop, "stop", false, "end learning without writing anything")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func egressLearnRun(opts *EgressLearnOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	rep, err := box.Learned(l, f.Platform, opts.Box, f.Dir, box.LearnOptions{Apply: opts.Apply, Stop: opts.Stop}, now)
	if err != nil {
		return err
	}
	name, lr, active, end, props, proposed := rep.Box, rep.Window, rep.Active, rep.End, rep.Proposals, rep.Proposed
	applied, stopped, flagged, refused := rep.Applied, rep.Stopped, rep.Flagged, rep.Refused
	if opts.JSON {
		if props == nil {
			props = []egress.Proposal{}
		}
		return printJSON(opts.IO.Out, SchemaEgressLearn, map[string]any{"box": name, "started": lr.Started, "ends": lr.End(), "learning": active && !stopped,
			"proposal": props, "entries": nonNil(proposed), "applied": applied, "stopped": stopped})
	}
	w := opts.IO.Out
	switch {
	case active && !stopped:
		fmt.Fprintf(w, "box %s is learning since %s, until %s\n", name, display.Clock(lr.Started, now), display.Clock(lr.Until, now))
	default:
		fmt.Fprintf(w, "box %s learned from %s to %s\n", name, display.Clock(lr.Started, now), display.Clock(end, now))
	}
	if len(props) == 0 {
		fmt.Fprintln(w, "it reached nothing off its allow-list: nothing to propose")
	} else {
		n := 0
		for _, p := range props {
			n += p.Count
		}
		fmt.Fprintf(w, "\nproposed allow-list (%d connections to %d domains):\n", n, len(props))
		tw := newTable(w, opts.IO.OutTTY)
		for _, p := range props {
			tw.Row("  "+display.Host(p.Domain, 0), p.Count, sessionsText(p.Sessions))
			for _, x := range p.Learned {
				tw.Row("    "+display.Authority(x.Entry, 0), x.Count)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, v := range flagged {
		fmt.Fprintf(w, "flagged: %s: %s\n", display.Authority(v.Entry, 0), display.Text(v.Why, maxLine))
	}
	for _, v := range refused {
		fmt.Fprintf(w, "not proposed (refused by the grant check): %s: %s\n", display.Authority(v.Entry, 0), display.Text(v.Why, maxLine))
	}
	switch {
	case applied:
		fmt.Fprintf(w, "\nadded %d entries to %s\n", len(proposed), l.ProjectConfig(name))
	case len(proposed) > 0 && !stopped:
		fmt.Fprintf(w, "\nto allow these and end learning: corral egress learn %s --apply\n", name)
	}
	if stopped {
		fmt.Fprintf(w, "learning ended: the broker enforces the allow-list of %s again\n", name)
	}
	return nil
}

func sessionsText(ids []string) string {
	if len(ids) == 0 {
		return "no session"
	}
	safe := make([]string, len(ids))
	for i, id := range ids {
		safe[i] = safeText(id)
	}
	return "sessions " + strings.Join(safe, ", ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
