package box

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hostmem"
	"github.com/corral-dev/corral/core/lima"
)

// Status is what `corral ls`, `corral info` and the menu show of a box.
// It is read from Lima's instance directory and corral's own state,
// without running limactl, so the app can poll it cheaply.
type Status struct {
	boxmeta.Meta
	// State is what Lima's processes show (boxstate.FromLima): Missing,
	// Stopped, Running or Broken; Shown refines it with corral's marks.
	State     boxstate.State `json:"state"`
	MemBytes  uint64         `json:"mem_bytes"`
	PeakBytes uint64         `json:"peak_bytes,omitempty"`
	MemSource string         `json:"mem_source,omitempty"`
	Idle      time.Duration  `json:"idle_ns"` // since the last activity (lastActivity), when no session is live
	// IdleDue says the idle rule (IsIdle) stops the box now: what `corral
	// stop --idle`, the sweep and the menu's "Stop idle boxes" act on.
	IdleDue  bool      `json:"idle_due"`
	Live     int       `json:"live_sessions"`
	Sessions []Session `json:"sessions,omitempty"`
	Broker   bool      `json:"broker_running"`
	// Problem says why the box is Broken, when Lima's files say so (a pid
	// file or lima.yaml that cannot be read, a driver without its agent).
	Problem string `json:"problem,omitempty"`
	// LearningUntil is when the box's learning window ends, while it
	// learns (approval.Learning); zero otherwise.
	LearningUntil time.Time `json:"learning_until,omitzero"`
}

// StatusOf reads one box's status.
func (s *Service) StatusOf(m boxmeta.Meta) Status { return s.statusOf(m, hostmem.NewScan()) }

// statusOf reads one box's status; scan is shared by every box of one List.
// A nil scan reads no memory (a walk of the VM process's memory map): the
// idle sweep at the start of every command does not need it.
func (s *Service) statusOf(m boxmeta.Meta, scan *hostmem.Scan) Status {
	st := Status{Meta: m, State: boxstate.Missing}
	inst, err := lima.ReadInstanceDir(s.Layout.LimaHome(), m.Name)
	switch {
	case err == nil:
		st.State = boxstate.FromLima(inst.Status)
		if inst.Status == lima.StatusBroken {
			st.Problem = inst.Reason
		}
	case !errors.Is(err, lima.ErrNotFound):
		// Not "missing": something is there that cannot be read.
		st.State, st.Problem = boxstate.FromLima(lima.StatusBroken), err.Error()
	}
	if scan != nil && st.State == boxstate.Running {
		if pid, err := scan.VMProcess(filepath.Join(s.Layout.LimaHome(), m.Name), string(m.VMType)); err == nil {
			if u, err := hostmem.ForPID(pid); err == nil {
				st.MemBytes, st.PeakBytes, st.MemSource = u.Bytes, u.PeakBytes, u.Source
			}
		}
	}
	st.Sessions = s.LiveSessions(m.Name)
	st.Live = len(st.Sessions)
	now, last := s.now(), s.lastActivity(m)
	if st.Live == 0 && !last.IsZero() {
		st.Idle = now.Sub(last)
	}
	idleStop, _ := time.ParseDuration(m.IdleStop)
	st.IdleDue = IsIdle(st.State, st.Live, last, idleStop, now)
	st.Broker = brokerAlive(m.BrokerPID, m.Name, m.BrokerStart)
	if m.Network == config.NetworkBroker {
		if lr, err := approval.ReadLearning(s.Layout, m.Name); err == nil && lr.ActiveAt(now) {
			st.LearningUntil = lr.Until
		}
	}
	return st
}

// Shown is the box's state in the machine (boxstate.Of): what `corral ls`,
// `corral info` and the menu show.
func (st Status) Shown() boxstate.State { return st.Meta.StateOf(st.State) }

// List reads the status of every box.
func (s *Service) List() ([]Status, error) {
	metas, err := boxmeta.List(s.Layout)
	out := make([]Status, 0, len(metas))
	scan := hostmem.NewScan() // one process scan per refresh, not one per vz box
	for _, m := range metas {
		out = append(out, s.statusOf(m, scan))
	}
	return out, err
}
