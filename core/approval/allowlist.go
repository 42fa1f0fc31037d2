package approval

import (
	"slices"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
)

// Origin says where an allow-list entry comes from.
type Origin string

// Origins, in the order AllowList lists them.
const (
	OriginAgent    Origin = "agent"
	OriginGroup    Origin = "group"
	OriginConfig   Origin = "config"
	OriginApproval Origin = "approval"
)

// Toolchains is a box's "toolchains" egress group: what its golden image
// recorded (core/toolreg). The zero value is no group.
type Toolchains struct {
	Golden  string
	Entries []string
}

// Rule is one entry of a box's live allow-list and where it comes from.
type Rule struct {
	Entry  string `json:"entry"`
	Origin Origin `json:"origin"`
	// Source names the agent, the config file, or the approval's scope.
	Source string `json:"source"`
	// Expires is set for expiring approvals.
	Expires time.Time `json:"expires,omitzero"`
	// Risk is the grant check's verdict (config.CheckGrant), Why its
	// sentence. A refused rule is listed so that it can be reported, and
	// is in force nowhere: Entries and Allowed leave it out.
	Risk config.Risk `json:"risk"`
	Why  string      `json:"why,omitempty"`
}

// Refused reports whether the grant check refuses r: a trusted layer (or an
// old approval) holds an entry no path of corral grants, such as "*.com" or
// "0.0.0.0/0". corral never writes one; the broker ignores it.
func (r Rule) Refused() bool { return r.Risk == config.RiskRefused }

// AllowList assembles a box's allow-list: the default hosts of the
// configured agent, then the toolchains group its golden recorded, then
// the named groups of egress_groups (core/egress Groups), then the egress
// entries of every config layer in merge order (egress merges by union, so
// every layer contributes), then the approvals given. An entry listed more
// than once keeps its first source. Each rule carries the grant check's
// verdict (config.CheckGrant): the refused ones are in the list, marked, and
// in force nowhere (Entries, Allowed).
//
// res must come from a config that loaded without error: a failed load's
// partial result may still hold a layer the trust policy refused.
func AllowList(res config.Result, tc Toolchains, approvals []Approval) ([]Rule, error) {
	rules, err := ConfigRules(res, tc)
	if err != nil {
		return nil, err
	}
	return WithApprovals(rules, approvals), nil
}

// ConfigRules is AllowList without approvals: the rules the config and the
// golden give, which change only when a file does (a broker builds them
// once per reload and adds the approvals in force with WithApprovals).
func ConfigRules(res config.Result, tc Toolchains) ([]Rule, error) {
	var l ruleList
	c := res.Settings()
	a, err := agent.Find(c.Agents, c.Agent)
	if err != nil {
		return nil, err
	}
	for _, e := range a.Egress {
		l.add(Rule{Entry: e, Origin: OriginAgent, Source: a.Name})
	}
	l.addToolchains(tc)
	for _, name := range c.EgressGroups {
		if g, ok := egress.LookupGroup(name); ok {
			for _, e := range g.Entries {
				l.add(Rule{Entry: e, Origin: OriginGroup, Source: g.Name})
			}
		}
	}
	for _, ly := range res.Layers {
		for _, e := range ly.Config.Egress {
			l.add(Rule{Entry: e, Origin: OriginConfig, Source: ly.Path})
		}
	}
	return l.rules, nil
}

// WithoutConfig is the allow-list of a box whose config does not load: the
// toolchains group its golden recorded and the approvals given; no agent's
// hosts and no config entries, as no config names them.
func WithoutConfig(tc Toolchains, approvals []Approval) []Rule {
	var l ruleList
	l.addToolchains(tc)
	return WithApprovals(l.rules, approvals)
}

func (l *ruleList) addToolchains(tc Toolchains) {
	for _, e := range tc.Entries {
		l.add(Rule{Entry: e, Origin: OriginGroup, Source: egress.ToolchainsGroup + " (" + tc.Golden + ")"})
	}
}

// WithApprovals returns rules followed by the approvals' rules (a new
// slice; rules is not changed), an entry already listed keeping its first
// source.
func WithApprovals(rules []Rule, approvals []Approval) []Rule {
	l := ruleList{rules: slices.Clip(rules), seen: map[string]bool{}}
	for _, r := range rules {
		l.seen[r.Entry] = true
	}
	for _, a := range approvals {
		// An approval lasts no longer than the organisation's
		// max_approval, however it was written.
		l.add(Rule{Entry: a.Entry, Origin: OriginApproval, Source: string(a.Scope), Expires: a.InForceUntil()})
	}
	return l.rules
}

// ruleList collects rules, each with the grant check's verdict, the first
// of an entry kept.
type ruleList struct {
	rules []Rule
	seen  map[string]bool
}

func (l *ruleList) add(r Rule) {
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	if l.seen[r.Entry] {
		return
	}
	l.seen[r.Entry] = true
	v := config.CheckGrant("egress", r.Entry, config.GrantContext{})
	r.Risk, r.Why = v.Risk, v.Why
	l.rules = append(l.rules, r)
}

// Entries returns the parsed entries of the rules the grant check does not
// refuse, for egress.NewPolicy: the grant check parsed each
// (egress.ParseAllowEntry), so none is dropped here.
func Entries(rules []Rule) []egress.AllowEntry {
	var out []egress.AllowEntry
	for _, r := range Allowed(rules) {
		if e, err := egress.ParseAllowEntry(r.Entry); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// Allowed returns the rules the grant check does not refuse.
func Allowed(rules []Rule) []Rule {
	var out []Rule
	for _, r := range rules {
		if !r.Refused() {
			out = append(out, r)
		}
	}
	return out
}

// NextExpiry is the earliest expiry among approvals, or zero if none
// expires: the time at which a broker must rebuild its policy even though
// no file changed.
func NextExpiry(approvals []Approval) time.Time {
	var next time.Time
	for _, a := range approvals {
		if exp := a.InForceUntil(); !exp.IsZero() && (next.IsZero() || exp.Before(next)) {
			next = exp
		}
	}
	return next
}
