package box

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hostinfo"
)

// The low-memory rule: when the host's available memory is under
// save_when_free_below (global config), the idle sweep saves the least
// recently used idle box instead of stopping it (or leaving it running
// until its idle_stop): its memory comes back to the host and its state
// is kept. LowMemorySaves decides which box and when; Sweep acts on it
// before its idle rule.

// LowMemoryMinIdle is how long a box must have been idle before the
// low-memory rule saves it (or its idle_stop, when shorter): a box the
// user left a moment ago is not the least recently used in any useful
// sense.
const LowMemoryMinIdle = 5 * time.Minute

// LowMemory is the low-memory rule's decision for one sweep.
type LowMemory struct {
	Available uint64 // the host's available memory (hostinfo.Available)
	Threshold uint64 // save_when_free_below; 0 is off
	// Save are the boxes the sweep may save, least recently used first:
	// it saves the first one whose save succeeds and no other (one box
	// per sweep: the next sweep, a minute later in the app, sees the
	// memory it freed). Empty when the host is not short of memory.
	Save []string
}

// Short reports whether the host's available memory is under the
// threshold.
func (d LowMemory) Short() bool {
	return d.Threshold > 0 && d.Available > 0 && d.Available < d.Threshold
}

// LowMemorySaves is the low-memory rule, pure: with available under
// threshold (neither 0: off, unknown), the candidates among boxes are the
// running qemu boxes (vz cannot save) with no live session, an idle_stop
// that is not "0" (a box the user keeps up is never taken down), idle for
// at least LowMemoryMinIdle or their idle_stop if shorter; they come least
// recently used first (the longest idle), ties by name.
func LowMemorySaves(boxes []Status, available, threshold uint64) LowMemory {
	d := LowMemory{Available: available, Threshold: threshold}
	if !d.Short() {
		return d
	}
	var cands []Status
	for _, st := range boxes {
		idleStop, err := time.ParseDuration(st.IdleStop)
		if err != nil || idleStop <= 0 {
			continue
		}
		if st.State != boxstate.Running || st.Live > 0 || st.VMType != config.VMTypeQEMU || st.Idle < min(idleStop, LowMemoryMinIdle) {
			continue
		}
		cands = append(cands, st)
	}
	slices.SortFunc(cands, func(a, b Status) int {
		if c := cmp.Compare(b.Idle, a.Idle); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for _, st := range cands {
		d.Save = append(d.Save, st.Name)
	}
	return d
}

// lowMemoryThreshold is save_when_free_below of the global config (the
// host's memory is one for all boxes, so no box's own file decides it);
// 0 when unset or when the file does not load (the load error is the
// caller's to report: the rule is then off).
func (s *Service) lowMemoryThreshold() (uint64, error) {
	l, err := config.LoadFile(config.KindGlobal, s.Layout.GlobalConfig())
	if err != nil {
		return 0, err
	}
	return config.Merge(l).Settings().SaveFreeBelow, nil
}

func (s *Service) availableMemory() (uint64, error) {
	if s.AvailableMemory != nil {
		return s.AvailableMemory()
	}
	return hostinfo.Available()
}

// saveForMemory applies the low-memory rule to idle (every box's status,
// as IdleBoxes reads them): it saves the first candidate that saves and
// returns its name ("" when none). A candidate whose save is refused or
// fails is left running, for the idle rule to treat as before.
func (s *Service) saveForMemory(ctx context.Context, boxes []Status) string {
	threshold, err := s.lowMemoryThreshold()
	if err != nil {
		s.Logger.Warn("reading save_when_free_below", "err", err)
		return ""
	}
	if threshold == 0 {
		return ""
	}
	avail, err := s.availableMemory()
	if err != nil {
		s.Logger.Warn("reading the host's available memory", "err", err)
		return ""
	}
	d := LowMemorySaves(boxes, avail, threshold)
	for _, name := range d.Save {
		if s.guestSessionsAlive(ctx, name) {
			s.touchActivity(name)
			continue
		}
		s.progress("the host has %s of memory available, under save_when_free_below %s: saving box %s, the least recently used idle box",
			config.FormatSize(d.Available), config.FormatSize(d.Threshold), name)
		ev := audit.Event{Kind: audit.KindLowMemorySave, Fields: map[string]any{
			audit.FieldAvailableBytes: d.Available, audit.FieldThresholdBytes: d.Threshold}}
		err := s.save(ctx, name, ev, boxmeta.SavedLowMemory)
		if err == nil {
			return name
		}
		if errors.Is(err, context.Canceled) {
			return ""
		}
		s.progress("warning: box %s could not be saved for low memory: %v", name, err)
	}
	return ""
}
