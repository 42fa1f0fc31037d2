package box

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
)

// LearnOptions say what `corral egress learn` does besides reporting.
type LearnOptions struct {
	// Apply writes the proposed entries to the box's trusted layer and
	// ends learning; Stop only ends it.
	Apply, Stop bool
}

// LearnReport is what a box learned and what corral proposes from it.
type LearnReport struct {
	Box    string
	Window approval.Learning
	// Active says the box still learns; End is when what is reported ends
	// (now while it learns).
	Active bool
	End    time.Time
	// Proposals are the learned destinations by domain (egress.Propose).
	Proposals []egress.Proposal
	// Proposed are the entries the grant check lets be written (ok and
	// flagged, canonical); Flagged and Refused are the verdicts to show
	// (refused entries are never written).
	Proposed         []string
	Flagged, Refused []config.Verdict
	// Applied and Stopped say what opt did.
	Applied, Stopped bool
}

// Learned reports what the box (boxmeta.Locate: named, else the project at dir's)
// learned: the destinations its broker allowed only because it learned,
// proposed as an allow-list after the one grant check. With opt.Apply the
// proposal is written (WriteTrusted: audit first) and learning ends; with
// opt.Stop learning ends.
func Learned(l paths.Layout, p config.Platform, name, dir string, opt LearnOptions, now time.Time) (LearnReport, error) {
	loc, err := boxmeta.Locate(l, name, dir)
	if err != nil {
		return LearnReport{}, err
	}
	rep := LearnReport{Box: loc.Box}
	if rep.Window, err = approval.ReadLearning(l, loc.Box); err != nil {
		return rep, err
	}
	lr := rep.Window
	if lr.Started.IsZero() {
		return rep, hint.New(fmt.Errorf("egress learn: box %s never learned", loc.Box), "corral up --learn starts learning (or network = \"learn\" in the box's trusted layer)")
	}
	rep.Active, rep.End = lr.ActiveAt(now), lr.End()
	if rep.Active {
		rep.End = now
	}
	entries, err := egress.ReadLog(l.EgressLog(loc.Box), lr.Started)
	if err != nil {
		return rep, err
	}
	rep.Proposals = egress.Propose(entries, lr.Started, rep.End.Add(time.Nanosecond))
	rep.Proposed, rep.Flagged, rep.Refused = LearnGrants(egress.ProposedEntries(rep.Proposals))
	if opt.Apply && len(rep.Proposed) > 0 {
		why := fmt.Sprintf("learned from %s to %s", lr.Started.UTC().Format(time.RFC3339), rep.End.UTC().Format(time.RFC3339))
		r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: loc.Project, Platform: p})
		if err != nil {
			return rep, fmt.Errorf("egress learn --apply: the box's config must load first (nothing was applied): %w", err)
		}
		if err := WriteTrusted(l, r, Grant{Entries: map[string][]string{"egress": rep.Proposed}, Why: why, Who: "corral egress learn",
			Audit: map[string]any{"learned": true}, Op: "egress learn", Done: "applied"}, now); err != nil {
			return rep, err
		}
		rep.Applied = true
	}
	if (opt.Apply || opt.Stop) && rep.Active {
		if rep.Stopped, err = approval.StopLearning(l, loc.Box, now, audit.ActorCLI); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// LearnGrants sorts learned entries by the one grant check: proposed (ok
// and flagged, canonical), the flagged ones again with their reason, and the
// refused ones, which are shown and never written.
func LearnGrants(entries []string) (proposed []string, flagged, refused []config.Verdict) {
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
