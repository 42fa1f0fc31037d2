package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
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
	name, projectDir, err := egressTarget(&EgressOptions{Box: opts.Box, Factory: f}, l)
	if err != nil {
		return err
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	lr, err := approval.ReadLearning(l, name)
	if err != nil {
		return err
	}
	if lr.Started.IsZero() {
		return hint.New(fmt.Errorf("egress learn: box %s never learned", name), "corral up --learn starts learning (or network = \"learn\" in the box's trusted layer)")
	}
	active := lr.ActiveAt(now)
	end := lr.End()
	if active {
		end = now
	}
	entries, err := egress.ReadLog(l.EgressLog(name), lr.Started)
	if err != nil {
		return err
	}
	props := egress.Propose(entries, lr.Started, end.Add(time.Nanosecond))
	// The one grant check: what it refuses is shown with the reason,
	// never written; flagged entries are written and shown with theirs.
	proposed, flagged, refused := learnGrants(egress.ProposedEntries(props))
	applied, stopped := false, false
	if opts.Apply && len(proposed) > 0 {
		why := fmt.Sprintf("learned from %s to %s", lr.Started.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
		r, err := box.Resolve(l, box.ResolveOptions{Dir: projectDir, Platform: f.Platform})
		if err != nil {
			return fmt.Errorf("egress learn --apply: the box's config must load first (nothing was applied): %w", err)
		}
		if err := box.WriteTrusted(l, r, box.Grant{Entries: map[string][]string{"egress": proposed}, Why: why, Who: "corral egress learn",
			Audit: map[string]any{"learned": true}, Op: "egress learn", Done: "applied"}, now); err != nil {
			return err
		}
		applied = true
	}
	if (opts.Apply || opts.Stop) && active {
		if stopped, err = approval.StopLearning(l, name, now, audit.ActorCLI); err != nil {
			return err
		}
	}
	if opts.JSON {
		if props == nil {
			props = []egress.Proposal{}
		}
		return printJSON(opts.IO.Out, map[string]any{"box": name, "started": lr.Started, "ends": lr.End(), "learning": active && !stopped,
			"proposal": props, "entries": nonNil(proposed), "applied": applied, "stopped": stopped})
	}
	w := opts.IO.Out
	switch {
	case active && !stopped:
		fmt.Fprintf(w, "box %s is learning since %s, until %s\n", name, clock(lr.Started, now), clock(lr.Until, now))
	default:
		fmt.Fprintf(w, "box %s learned from %s to %s\n", name, clock(lr.Started, now), clock(end, now))
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

// learnGrants sorts learned entries by the one grant check: proposed (ok
// and flagged, canonical), the flagged ones again with their reason, and the
// refused ones, which are shown and never written.
func learnGrants(entries []string) (proposed []string, flagged, refused []config.Verdict) {
	for _, e := range entries {
		switch v := config.CheckGrant("egress", e, config.GrantContext{}); v.Risk {
		case config.RiskRefused:
			refused = append(refused, v)
		case config.RiskFlagged:
			flagged = append(flagged, v)
			proposed = append(proposed, v.Entry)
		default:
			proposed = append(proposed, v.Entry)
		}
	}
	return proposed, flagged, refused
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

// clock shows t as a time of day when it is today (in now's location),
// else as date and time.
func clock(t, now time.Time) string {
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
