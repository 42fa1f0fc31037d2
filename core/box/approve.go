package box

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
)

// Judged is a repository request with the grant check's verdict.
type Judged struct {
	Req config.RepoRequest
	V   config.Verdict
}

// Selector is the KEY=ENTRY argument of `corral approve` that names the
// request (its entry in canonical form).
func (j Judged) Selector() string { return j.Req.Key + "=" + j.V.Entry }

// Refused says whether the grant check refuses the request.
func (j Judged) Refused() bool { return j.V.Risk == config.RiskRefused }

// Describe is the request for a sentence, sanitised.
func (j Judged) Describe() string {
	switch j.Req.Key {
	case "egress_groups":
		return fmt.Sprintf("the egress group %s (corral egress groups lists its hosts)", display.Text(j.Req.Entry, 0))
	case "ports":
		return fmt.Sprintf("ports %s (a guest port forwarded to the host's 127.0.0.1)", display.Text(j.Req.Entry, 0))
	case "toolchains":
		return fmt.Sprintf("the toolchain %s (installed in the golden image)", display.Text(j.Req.Entry, 0))
	case "packages":
		return fmt.Sprintf("the package %s (installed as root in the golden image)", display.Text(j.Req.Entry, 0))
	}
	return "egress " + display.Authority(j.Req.Entry, 0)
}

// Requests are a box's repository requests not granted yet (the egress,
// ports, toolchains, ... its .corral.toml asks for), each judged by the
// grant check: Pending holds the pending ones and, in file order among
// them, the refused ones (Refused), which can never be approved.
type Requests struct {
	Box      string
	Resolved boxmeta.Resolved
	Pending  []Judged
}

// ToApprove finds the box (boxmeta.Locate: named, else the project at dir's),
// loads its config and judges its pending requests; only, when not empty,
// narrows them to those KEY=ENTRY selectors (each must name a pending
// request). Requests are answered only for a config that loads cleanly:
// approving hosts for a file that is refused would be a promise corral does
// not keep.
func ToApprove(l paths.Layout, p config.Platform, name, dir string, only []string) (Requests, error) {
	loc, err := boxmeta.Locate(l, name, dir)
	if err != nil {
		return Requests{}, err
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: loc.Project, Platform: p})
	if err != nil {
		return Requests{}, err
	}
	q := Requests{Box: r.Project.Box, Resolved: r}
	ctx := r.Loaded.Settings().GrantContext()
	for _, rq := range r.Loaded.Requests {
		if rq.Status != config.RequestGranted {
			v := config.CheckGrant(rq.Key, rq.Entry, ctx)
			// Load's verdict holds what only the loaded config knows
			// (the organisation's repo_requests = false): a request it
			// refused stays refused.
			if rq.Status == config.RequestRefused && v.Risk != config.RiskRefused {
				v.Risk, v.Why, v.Fix = rq.Risk, rq.Why, rq.Fix
			}
			q.Pending = append(q.Pending, Judged{rq, v})
		}
	}
	if len(only) == 0 {
		return q, nil
	}
	var narrowed []Judged
	for _, sel := range only {
		key, entry, _ := strings.Cut(sel, "=")
		canon := config.CheckGrant(key, entry, ctx).Entry
		i := slices.IndexFunc(q.Pending, func(j Judged) bool { return j.Req.Key == key && j.V.Entry == canon })
		if i < 0 {
			return Requests{}, hint.New(fmt.Errorf("approve: box %s has no pending request %s", q.Box, display.Text(sel, 200)), "corral config check lists the pending requests")
		}
		if !slices.ContainsFunc(narrowed, func(j Judged) bool { return j.Selector() == q.Pending[i].Selector() }) {
			narrowed = append(narrowed, q.Pending[i])
		}
	}
	q.Pending = narrowed
	return q, nil
}

// Refused are the pending requests the grant check refuses: never written.
func (q Requests) Refused() []Judged {
	var out []Judged
	for _, j := range q.Pending {
		if j.Refused() {
			out = append(out, j)
		}
	}
	return out
}

// Approve writes the accepted requests to the box's trusted layer (through
// WriteTrusted: the audit record first), with a comment naming the
// repository file's content hash. A refused request is never written.
func (q Requests) Approve(l paths.Layout, accepted []Judged, now time.Time) error {
	entries := map[string][]string{}
	for _, j := range accepted {
		if j.Refused() {
			return fmt.Errorf("approve: %s is refused by the grant check (nothing was approved)", j.Selector())
		}
		entries[j.Req.Key] = append(entries[j.Req.Key], j.V.Entry)
	}
	if len(accepted) == 0 {
		return nil
	}
	r := q.Resolved
	return WriteTrusted(l, r, Grant{Entries: entries,
		Why: fmt.Sprintf("requested by %s (%s)", accepted[0].Req.File, r.Loaded.ProjectHash), Who: "corral approve",
		Audit: map[string]any{"request": r.Loaded.ProjectHash}, Op: "approve", Done: "approved"}, now)
}
