package broker

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

// RecentDenials is how many denials a Report lists.
const RecentDenials = 10

// ReportOptions select what a Report covers.
type ReportOptions struct {
	// Box names the box; "" is the box of the project at Dir (boxmeta.Locate).
	Box, Dir string
	// Since, when not zero, drops older log lines.
	Since time.Time
	// Session narrows the log to one session's slice (its id or prefix).
	Session string
	// LogOnly reads the log and nothing else (`corral egress --log`).
	LogOnly  bool
	Platform config.Platform
	Now      time.Time
}

// Report is what `corral egress` shows of a box's egress: its allow-list
// as the broker builds it, what it reached and was refused, the
// repository's pending requests and the brokered credentials it used.
type Report struct {
	Box string
	// Session is the session the log is narrowed to ("" for all).
	Session string
	// Entries are the log lines read (since Since, in Session).
	Entries []egress.Entry
	// Rules are the rules in force; Refused are rules the grant check
	// refuses (written by hand into a trusted layer), in force nowhere.
	Rules, Refused []approval.Rule
	// ConfigErr is why the allow-list lacks the config (it does not
	// load); the rest of the report stands.
	ConfigErr error
	// Requests are the repository's requests pending approval;
	// RefusedRequests those the grant check refuses (a verdict: never
	// allowed, never offered for approval).
	Requests, RefusedRequests []config.RepoRequest
	// LearningUntil is when the box's learning ends, while it learns.
	LearningUntil time.Time
	Summary       []egress.HostSummary
	// Denials are the last RecentDenials denials, oldest first.
	Denials     []egress.Entry
	Credentials []audit.CredentialUse
	// CredentialRefused counts credential requests the broker refused.
	CredentialRefused int
}

// EgressReport reads the report of a box's egress.
func EgressReport(l paths.Layout, o ReportOptions) (Report, error) {
	loc, err := boxmeta.Locate(l, o.Box, o.Dir)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Box: loc.Box}
	if rep.Entries, err = egress.ReadLog(l.EgressLog(loc.Box), o.Since); err != nil {
		return rep, err
	}
	if o.Session != "" {
		var ok bool
		if rep.Entries, ok = egress.SessionSlice(rep.Entries, o.Session); !ok {
			return rep, hint.New(fmt.Errorf("egress: no session %q in the egress log of box %s", o.Session, loc.Box), fmt.Sprintf("corral egress %s --log lists the session markers", loc.Box))
		}
		rep.Session = rep.Entries[0].Session
	}
	if o.LogOnly {
		return rep, nil
	}
	rules, err := AllowList(l, loc.Box, loc.Project, o.Platform, o.Now)
	rep.ConfigErr = err
	for _, r := range rules {
		if r.Refused() {
			rep.Refused = append(rep.Refused, r)
		}
	}
	rep.Rules = approval.Allowed(rules)
	open, _ := boxmeta.OpenRequestsErr(l, loc.Box, loc.Project) // ConfigErr says why, when it does not load
	rep.Requests, rep.RefusedRequests = open.Pending, open.Refused
	if lr, err := approval.ReadLearning(l, loc.Box); err == nil && lr.ActiveAt(o.Now) {
		rep.LearningUntil = lr.Until
	}
	rep.Summary = egress.Summarize(rep.Entries)
	if evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: loc.Box, Since: o.Since}); err == nil {
		rep.Credentials, rep.CredentialRefused = audit.CredentialUses(evs)
	}
	for i := len(rep.Entries) - 1; i >= 0 && len(rep.Denials) < RecentDenials; i-- {
		if e := rep.Entries[i]; e.IsDecision() && !e.Allowed {
			rep.Denials = append(rep.Denials, e)
		}
	}
	for i, j := 0, len(rep.Denials)-1; i < j; i, j = i+1, j-1 {
		rep.Denials[i], rep.Denials[j] = rep.Denials[j], rep.Denials[i]
	}
	return rep, nil
}
