package egress

import (
	"cmp"
	"slices"
	"strconv"
	"time"
)

// maxProposalSessions caps the session IDs kept per destination.
const maxProposalSessions = 8

// Learned is one destination a learning box reached: the broker allowed it
// only because the box was learning ([ReasonLearning]).
type Learned struct {
	// Entry is the allow-list entry that would allow it: the host for
	// ports 80 and 443, host:port otherwise.
	Entry    string    `json:"entry"`
	Count    int       `json:"count"`
	Last     time.Time `json:"last"`
	Sessions []string  `json:"sessions"` // host sessions open at the time (at most 8)
}

// Proposal is what a learning box reached under one registrable domain
// (eTLD+1 by the Public Suffix List; a name that has none, such as a
// single label, is its own domain).
type Proposal struct {
	Domain   string    `json:"domain"`
	Count    int       `json:"count"`
	Sessions []string  `json:"sessions"`
	Learned  []Learned `json:"learned"`
}

// Propose turns the decision log of a learning window into an allow-list
// proposal: every destination allowed with [ReasonLearning] at or after
// from and before to, grouped by registrable domain, with counts and the
// sessions open when it was reached (session markers, see
// [SessionSlice]). Domains come most used first, then by name; entries
// within a domain by name. Entries that would not parse as allow-list
// entries (which the broker never logs as learned) are left out.
func Propose(entries []Entry, from, to time.Time) []Proposal {
	open := map[string]bool{}
	byEntry := map[string]*Learned{}
	for _, e := range entries {
		switch e.Kind {
		case KindSessionStart:
			open[e.Session] = true
			continue
		case KindSessionEnd:
			delete(open, e.Session)
			continue
		}
		if !e.IsDecision() || !e.Allowed || e.Reason != ReasonLearning || e.Time.Before(from) || !e.Time.Before(to) {
			continue
		}
		entry := e.Host
		if e.Port != 80 && e.Port != 443 {
			entry = e.Host + ":" + strconv.Itoa(e.Port)
		}
		parsed, err := ParseAllowEntry(entry)
		if err != nil || !parsed.OneHost() {
			continue // not an entry of the one grammar (an IP literal, port 0, a bad name)
		}
		entry = parsed.String()
		l := byEntry[entry]
		if l == nil {
			l = &Learned{Entry: entry, Sessions: []string{}}
			byEntry[entry] = l
		}
		l.Count += e.N()
		if e.Time.After(l.Last) {
			l.Last = e.Time
		}
		for _, id := range sortedSet(open) {
			if len(l.Sessions) < maxProposalSessions && !slices.Contains(l.Sessions, id) {
				l.Sessions = append(l.Sessions, id)
			}
		}
	}
	byDomain := map[string]*Proposal{}
	for _, l := range byEntry {
		e, _ := ParseAllowEntry(l.Entry) // parsed above
		d := cmp.Or(RegistrableDomain(e.Host), e.Host)
		p := byDomain[d]
		if p == nil {
			p = &Proposal{Domain: d, Sessions: []string{}}
			byDomain[d] = p
		}
		p.Count += l.Count
		p.Learned = append(p.Learned, *l)
		for _, id := range l.Sessions {
			if len(p.Sessions) < maxProposalSessions && !slices.Contains(p.Sessions, id) {
				p.Sessions = append(p.Sessions, id)
			}
		}
	}
	out := make([]Proposal, 0, len(byDomain))
	for _, p := range byDomain {
		slices.SortFunc(p.Learned, func(a, b Learned) int { return cmp.Compare(a.Entry, b.Entry) })
		slices.Sort(p.Sessions)
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b Proposal) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Domain, b.Domain)) })
	return out
}

// ProposedEntries are the allow-list entries of proposals, in order.
func ProposedEntries(ps []Proposal) []string {
	var out []string
	for _, p := range ps {
		for _, l := range p.Learned {
			out = append(out, l.Entry)
		}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
