package box

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
)

// lastActivity is the latest of the box's last up, its last session start
// or end (the session directory's mtime) and its broker's last decision
// (the egress log's mtime).
func (s *Service) lastActivity(m boxmeta.Meta) time.Time {
	t := m.LastActivity
	if st := s.sessionsTouched(m.Name); st.After(t) {
		t = st
	}
	if st, err := os.Stat(s.Layout.EgressLog(m.Name)); err == nil && st.ModTime().After(t) {
		t = st.ModTime()
	}
	return t
}

// IsIdle is corral's one idle rule: a running box is stopped when it has no
// live session and no activity (sessions, broker decisions) for longer than
// its idle_stop; idle_stop 0 never stops. StatusOf applies it (Status.IdleDue),
// and everything that stops idle boxes (the sweep at the start of corral
// commands, `corral stop --idle`, the app's timer and its "Stop idle boxes")
// goes through IdleBoxes, so the menu's count and what is stopped agree.
func IsIdle(state boxstate.State, liveSessions int, last time.Time, idleStop time.Duration, now time.Time) bool {
	if state != boxstate.Running || liveSessions > 0 || idleStop <= 0 || last.IsZero() {
		return false
	}
	return now.Sub(last) > idleStop
}

// IdleBoxes lists the boxes whose Status.IdleDue is set.
func (s *Service) IdleBoxes() ([]Status, error) {
	all, err := s.statuses()
	var out []Status
	for _, st := range all {
		if st.IdleDue {
			out = append(out, st)
		}
	}
	return out, err
}

// statuses reads every box's status without its memory (the sweep needs
// none).
func (s *Service) statuses() ([]Status, error) {
	metas, err := boxmeta.List(s.Layout)
	out := make([]Status, 0, len(metas))
	for _, m := range metas {
		out = append(out, s.statusOf(m, nil))
	}
	return out, err
}

// Sweep stops every idle box and its broker, recording idle-stop in the
// audit log; a box with idle_action = "save" is saved instead (Save,
// idle-save), and stopped when the save is refused or fails. It runs at the start of corral commands, for `corral stop
// --idle`, on the app's timer and for its "Stop idle boxes"; there is no
// daemon. A box whose idle time ran out is asked for its detachable
// sessions first (one ssh channel, only then): one running counts as
// activity and keeps the box up for another idle_stop.
//
// First the low-memory rule (lowmem.go): when the host's available memory
// is under save_when_free_below, the least recently used idle box is
// saved (audit: low-memory-save), whatever its idle_action and before its
// idle_stop runs out; it is among the returned names.
func (s *Service) Sweep(ctx context.Context) ([]string, error) {
	all, err := s.statuses()
	var stopped []string
	var idle []Status
	saved := s.saveForMemory(ctx, all)
	if saved != "" {
		stopped = append(stopped, saved)
	}
	for _, st := range all {
		if st.IdleDue && st.Name != saved {
			idle = append(idle, st)
		}
	}
	for _, st := range idle {
		// A detachable session running in the box (an agent working with
		// no client attached) is activity.
		if s.guestSessionsAlive(ctx, st.Name) {
			s.touchActivity(st.Name)
			continue
		}
		if st.IdleAction == config.IdleActionSave {
			err := s.Save(ctx, st.Name, audit.KindIdleSave)
			if err == nil {
				stopped = append(stopped, st.Name)
				continue
			}
			s.progress("warning: idle box %s could not be saved: %v; stopping it", st.Name, err)
		}
		if serr := s.Stop(ctx, st.Name, audit.KindIdleStop); serr != nil {
			// err: the boxes that could not be read, which the caller reports.
			return stopped, errors.Join(fmt.Errorf("idle-stopping box %s: %w", st.Name, serr), err)
		}
		stopped = append(stopped, st.Name)
	}
	return stopped, err
}

// BudgetLevel is the outcome of a memory budget check.
type BudgetLevel int

const (
	BudgetOK BudgetLevel = iota
	BudgetWarn
	BudgetRefuse
)

// Budget compares the memory caps of running boxes plus a new one with
// the host's RAM: above 75 % warn, above 100 % refuse.
type Budget struct {
	Level     BudgetLevel
	UsedCaps  uint64 // caps of running boxes, without the new one
	NewCap    uint64
	HostBytes uint64
	Idle      []string // running boxes that could be stopped to make room
}

// CheckBudget computes the budget for starting a box with newCap.
func CheckBudget(running []Status, newCap, host uint64, idle []string) Budget {
	b := Budget{NewCap: newCap, HostBytes: host, Idle: idle}
	for _, st := range running {
		if st.State == boxstate.Running {
			b.UsedCaps += st.MemoryCap
		}
	}
	total := b.UsedCaps + newCap
	switch {
	case host == 0:
	case total > host:
		b.Level = BudgetRefuse
	case total*4 > host*3:
		b.Level = BudgetWarn
	}
	return b
}

func (b Budget) String() string {
	s := fmt.Sprintf("running boxes' memory caps %s + this box %s = %s of %s host RAM (%d%%)",
		config.FormatSize(b.UsedCaps), config.FormatSize(b.NewCap), config.FormatSize(b.UsedCaps+b.NewCap),
		config.FormatSize(b.HostBytes), (b.UsedCaps+b.NewCap)*100/max(b.HostBytes, 1))
	if len(b.Idle) > 0 {
		s += fmt.Sprintf("\nhint: idle boxes you could stop: %v (corral stop --idle)", b.Idle)
	}
	return s
}
