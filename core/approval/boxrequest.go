package approval

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// Requests a box files (egress.RequestPath) are recorded by its broker in
// the box's egress log, as "request" lines. They grant nothing. The user
// answers one by allowing it (an approval of its entry, any scope: Allow)
// or by denying it (a Denial in the approvals file: Deny). A request is
// pending while it is younger than RequestTTL and nothing answered it
// after it was filed: no approval of its entry added since, no denial of
// it since, and no connection to its host allowed since (a once-approval
// used up, a config change).

// RequestTTL is how long an unanswered request stays in the inbox.
const RequestTTL = 24 * time.Hour

// maxDenials bounds the denials kept; the oldest go first.
const maxDenials = 256

// Denial is the user's "deny" to a box's request.
type Denial struct {
	What egress.RequestWhat `json:"what"`
	// Request is what was asked for: the canonical entry (egress) or
	// "port N".
	Request string      `json:"request"`
	Time    time.Time   `json:"time"`
	Actor   audit.Actor `json:"actor"`
}

// check validates a stored denial: it names an entry of the one grammar
// or a port.
func (d Denial) check() error {
	_, err := requestKey(d.What, d.Request)
	return err
}

// requestKey checks what a request asked for and returns it canonical.
func requestKey(what egress.RequestWhat, req string) (string, error) {
	switch what {
	case egress.RequestEgress:
		e, err := egress.ParseAllowEntry(req)
		if err != nil {
			return "", fmt.Errorf("request %q: %w", req, err)
		}
		if e.IsRange() || e.Wild || e.AnyPort {
			return "", fmt.Errorf("request %q: a box asks for one host (host or host:port), never a wildcard, any port or range", req)
		}
		return e.String(), nil
	case egress.RequestPort:
		n, ok := strings.CutPrefix(req, "port ")
		p, err := strconv.Atoi(n)
		if !ok || err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != n {
			return "", fmt.Errorf("request %q: want \"port N\" with N from 1 to 65535", req)
		}
		return req, nil
	}
	return "", fmt.Errorf("request %q: unknown kind %q", req, what)
}

// ParseRequest reads what a user names to answer a request: a host
// (host or host:port) or "port N" (also "port:N"). It returns the kind and
// the canonical request.
func ParseRequest(s string) (egress.RequestWhat, string, error) {
	s = strings.TrimSpace(s)
	if n, ok := strings.CutPrefix(s, "port:"); ok {
		s = "port " + n
	}
	if strings.HasPrefix(s, "port ") {
		k, err := requestKey(egress.RequestPort, s)
		return egress.RequestPort, k, err
	}
	k, err := requestKey(egress.RequestEgress, s)
	return egress.RequestEgress, k, err
}

// Denials returns the stored denials, oldest first.
func (s *Store) Denials() ([]Denial, error) {
	b, err := untrusted.ReadJSON(s.path, untrusted.State(MaxFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, hint.New(fmt.Errorf("reading approvals of box %s: %w", s.box, err), s.remedy())
	}
	f, err := s.parseFile(b)
	return f.Denials, err
}

// Deny records the user's "deny" to the box's request for req (see
// [ParseRequest]) and returns it. A running broker refuses the
// connections it held for the request within about a second.
func (s *Store) Deny(req string, actor audit.Actor) (Denial, error) {
	what, key, err := ParseRequest(req)
	if err != nil {
		return Denial{}, err
	}
	now := s.now().UTC()
	d := Denial{What: what, Request: key, Time: now, Actor: actor}
	err = s.updateFile(func(f *file) error {
		f.Denials = slices.DeleteFunc(f.Denials, func(x Denial) bool {
			return x.Request == key || now.Sub(x.Time) > RequestTTL
		})
		f.Denials = append(f.Denials, d)
		if n := len(f.Denials) - maxDenials; n > 0 {
			f.Denials = f.Denials[n:]
		}
		return nil
	}, nil)
	if err != nil {
		return Denial{}, fmt.Errorf("denying %s for box %s: %w", key, s.box, err)
	}
	return d, nil
}

// Deny records the user's "deny" to a request of box (see [Store.Deny]).
func Deny(l paths.Layout, box, req string, actor audit.Actor) (Denial, error) {
	s, err := Open(l, box)
	if err != nil {
		return Denial{}, err
	}
	return s.Deny(req, actor)
}

// DeniedSince reports whether denials answer a request for key filed at
// filed.
func DeniedSince(denials []Denial, key string, filed time.Time) bool {
	for _, d := range denials {
		if d.Request == key && !d.Time.Before(filed) {
			return true
		}
	}
	return false
}

// Pending returns the requests in entries (the box's egress log, oldest
// first) that are still waiting for an answer at now, newest first: one
// per thing asked for (the latest request, with its reason). Request lines
// are the box's words: only those whose request is canonical are
// returned (a broker wrote them, but the log is a file).
func (s *Store) Pending(entries []egress.Entry, now time.Time) ([]egress.Entry, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	denials, err := s.Denials()
	if err != nil {
		return nil, err
	}
	return PendingRequests(entries, all, denials, now), nil
}

// PendingRequests is [Store.Pending] on approvals and denials already
// read.
func PendingRequests(entries []egress.Entry, approvals []Approval, denials []Denial, now time.Time) []egress.Entry {
	latest := map[string]int{}
	var order []string
	for i, e := range entries {
		if e.Kind != egress.KindRequest || now.Sub(e.Time) > RequestTTL {
			continue
		}
		key, err := requestKey(e.What, e.Request)
		if err != nil || key != e.Request {
			continue
		}
		if _, ok := latest[key]; !ok {
			order = append(order, key)
		}
		latest[key] = i
	}
	var out []egress.Entry
	for _, key := range order {
		r := entries[latest[key]]
		if DeniedSince(denials, key, r.Time) || approvedSince(approvals, key, r.Time) || reachedSince(entries[latest[key]+1:], r) {
			continue
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b egress.Entry) int { return b.Time.Compare(a.Time) })
	return out
}

func approvedSince(approvals []Approval, key string, filed time.Time) bool {
	for _, a := range approvals {
		if a.Entry == key && !a.Added.Before(filed) {
			return true
		}
	}
	return false
}

// reachedSince reports whether a connection the request asked for was
// allowed in later (the lines after it).
func reachedSince(later []egress.Entry, r egress.Entry) bool {
	if r.What != egress.RequestEgress {
		return false
	}
	p, err := egress.ParsePolicy([]string{r.Request}, nil)
	if err != nil {
		return false
	}
	for _, e := range later {
		if e.IsDecision() && e.Allowed && p.Decide(egress.Request{Kind: e.Kind, Host: e.Host, Port: e.Port}).Allowed {
			return true
		}
	}
	return false
}
