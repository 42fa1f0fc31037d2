package egress

import "time"

// DefaultMaxHeld caps the connections a server holds at once (see
// [Config.Hold]) when Config.MaxHeld is zero.
const DefaultMaxHeld = 8

// OnceRule is a once-approval: an allow-list entry that admits a single
// connection. Policy is the entry alone (with the box's ranges), so that
// the usual name and address checks apply to it.
type OnceRule struct {
	Entry  string
	Policy *Policy
}

// SetOnce replaces the once-approvals. A connection that the policy denies
// by name or port and that a once rule allows is admitted only if
// Config.ConsumeOnce uses the rule up first.
func (s *Server) SetOnce(rules []OnceRule) {
	r := append([]OnceRule(nil), rules...)
	s.once.Store(&r)
	s.broadcast()
}

// SetHold changes how long a denied connection is held (0: not at all).
// Connections already held keep the hold they started with.
func (s *Server) SetHold(d time.Duration) {
	s.hold.Store(int64(max(d, 0)))
	s.broadcast()
}

// Held is the number of connections held now.
func (s *Server) Held() int { return int(s.held.Load()) }

// changed returns a channel that is closed at the next change of the
// policy, the once rules or the hold, or at shutdown.
func (s *Server) changed() <-chan struct{} {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// broadcast wakes every waiter on changed.
func (s *Server) broadcast() {
	s.chMu.Lock()
	defer s.chMu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}

// approvable reports whether an approval could admit a denied request:
// only name and port denials can be lifted by `corral allow`.
func approvable(r Reason) bool { return r == ReasonHostNotAllowed || r == ReasonPortNotAllowed }

// admit decides a parsed request: the policy, then the once rules, then,
// when the answer is a denial an approval could lift and holding is on,
// the hold. It logs every decision it returns, and the denial that starts
// a hold (the app asks the user about it as about any denial).
//
// A held request waits, without an answer, for the policy to change: on
// every change it is checked again and proceeds as soon as it is allowed,
// so the client never has to retry. It is answered with the original
// denial when the hold ends (Config.Hold after it began), when the broker
// stops, or at once when MaxHeld requests are already held. The hold does
// not notice a client that hangs up meanwhile; the hold's bound frees its
// place. The outcome of a hold is logged again, with Decision.Held set to
// the wait, whether it is allowed or denied, so that the log tells a
// held-then-denied request from an instant denial.
//
// A request to a host the box asked for ([RequestInbox]) is held for the
// inbox's Hold even when holding is off, and is refused as soon as the
// user denies the box's request (the inbox settles it).
func (s *Server) admit(kind Kind, auth Authority, who Attribution) target {
	wake := s.changed() // before the check: a change after it is seen
	t := s.checkOnce(kind, auth)
	t.d.Who = who
	s.logDecision(t.d)
	hold := time.Duration(s.hold.Load())
	// A connection to a host the box asked for (the request channel)
	// waits for the user's answer even when hold_denied is off.
	asked := ""
	if !t.d.Allowed && approvable(t.d.Reason) && s.cfg.Requests != nil {
		if asked = s.cfg.Requests.asked(kind, auth); asked != "" {
			hold = max(hold, s.cfg.Requests.cfg.Hold)
		}
	}
	if t.d.Allowed || !approvable(t.d.Reason) || hold <= 0 || s.shutting.Load() {
		return t
	}
	if s.held.Add(1) > int64(s.maxHeld) {
		s.held.Add(-1)
		s.logger.Warn("egress hold limit reached; denying at once", "limit", s.maxHeld, "host", auth.Host)
		return t
	}
	defer s.held.Add(-1)
	start := time.Now()
	outcome := func(t target) target {
		now := time.Now()
		t.d.Held = max(now.Sub(start), time.Millisecond)
		t.d.Time = now
		t.d.Who = who
		s.logDecision(t.d)
		return t
	}
	timer := time.NewTimer(hold)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return outcome(t)
		case <-s.ctx.Done():
			return outcome(t)
		case <-wake:
		}
		if s.shutting.Load() {
			return outcome(t)
		}
		wake = s.changed()
		if again := s.checkOnce(kind, auth); again.d.Allowed || !approvable(again.d.Reason) {
			if asked != "" && again.d.Allowed {
				s.cfg.Requests.done(asked) // answered with an approval
			}
			return outcome(again)
		}
		if asked != "" && !s.cfg.Requests.stillPending(asked) {
			return outcome(t) // the user denied the request
		}
	}
}

// checkOnce is check, then the once rules for a name or port denial. The
// first once rule that passes every check and that ConsumeOnce uses up
// admits the request.
func (s *Server) checkOnce(kind Kind, auth Authority) target {
	t := s.check(s.ctx, kind, auth)
	if t.d.Allowed || !approvable(t.d.Reason) || s.cfg.ConsumeOnce == nil {
		return t
	}
	rules := s.once.Load()
	if rules == nil {
		return t
	}
	for _, r := range *rules {
		if !r.Policy.Decide(Request{Kind: kind, Host: auth.Host, Port: auth.Port}).Allowed {
			continue
		}
		ot := s.checkWith(s.ctx, r.Policy, kind, auth)
		if !ot.d.Allowed {
			return ot // the address is refused: the approval stays unused
		}
		if s.cfg.ConsumeOnce(r.Entry) {
			return ot
		}
	}
	return t
}
