package box

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
)

func TestIsIdle(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		state    boxstate.State
		live     int
		last     time.Time
		idleStop time.Duration
		want     bool
	}{
		{"idle long enough", boxstate.Running, 0, now.Add(-31 * time.Minute), 30 * time.Minute, true},
		{"not yet", boxstate.Running, 0, now.Add(-29 * time.Minute), 30 * time.Minute, false},
		{"live session", boxstate.Running, 1, now.Add(-5 * time.Hour), 30 * time.Minute, false},
		{"stopped", boxstate.Stopped, 0, now.Add(-5 * time.Hour), 30 * time.Minute, false},
		{"never stop", boxstate.Running, 0, now.Add(-5 * time.Hour), 0, false},
		{"no activity recorded", boxstate.Running, 0, time.Time{}, 30 * time.Minute, false},
	}
	for _, tt := range tests {
		if got := IsIdle(tt.state, tt.live, tt.last, tt.idleStop, now); got != tt.want {
			t.Errorf("%s: IsIdle = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheckBudget(t *testing.T) {
	gib := uint64(1 << 30)
	running := []Status{
		{Meta: boxmeta.Meta{MemoryCap: 4 * gib}, State: boxstate.Running},
		{Meta: boxmeta.Meta{MemoryCap: 8 * gib}, State: boxstate.Stopped},
	}
	if b := CheckBudget(running, 4*gib, 16*gib, nil); b.Level != BudgetOK {
		t.Errorf("8 of 16: %v", b.Level)
	}
	if b := CheckBudget(running, 9*gib, 16*gib, nil); b.Level != BudgetWarn {
		t.Errorf("13 of 16: %v", b.Level)
	}
	b := CheckBudget(running, 13*gib, 16*gib, []string{"old-123456"})
	if b.Level != BudgetRefuse {
		t.Errorf("17 of 16: %v", b.Level)
	}
	if s := b.String(); !strings.Contains(s, "4GiB + this box 13GiB = 17GiB of 16GiB host RAM (106%)") || !strings.Contains(s, "old-123456") {
		t.Errorf("message: %s", s)
	}
}

// TestShown: ls, info and the menu show the machine's state, refined from
// what Lima shows by the metadata's marks.
func TestShown(t *testing.T) {
	for _, tc := range []struct {
		st   Status
		want boxstate.State
	}{
		{Status{State: boxstate.Running}, boxstate.Running},
		{Status{State: boxstate.Stopped, Meta: boxmeta.Meta{Saved: &boxmeta.Saved{Tag: SuspendTag}}}, boxstate.Saved},
		{Status{State: boxstate.Running, Meta: boxmeta.Meta{ProvisionError: "x failed"}}, boxstate.Failed},
		{Status{State: boxstate.Running, Meta: boxmeta.Meta{Provisioning: true}}, boxstate.Provisioning},
		{Status{State: boxstate.Missing}, boxstate.Missing},
		{Status{State: boxstate.Broken, Meta: boxmeta.Meta{Saved: &boxmeta.Saved{Tag: SuspendTag}}}, boxstate.Broken},
	} {
		if got := tc.st.Shown(); got != tc.want {
			t.Errorf("%+v: Shown() = %s, want %s", tc.st.State, got, tc.want)
		}
		// An operation under the box's lock sees an interrupted create's VM.
		if got := tc.st.Meta.LockedStateOf(tc.st.State); tc.st.Provisioning && got != tc.st.State {
			t.Errorf("LockedStateOf of an interrupted create = %s, want %s", got, tc.st.State)
		}
	}
}
