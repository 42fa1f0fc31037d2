package box

import (
	"strings"
	"testing"
	"time"
)

func TestIsIdle(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		state    State
		live     int
		last     time.Time
		idleStop time.Duration
		want     bool
	}{
		{"idle long enough", StateRunning, 0, now.Add(-31 * time.Minute), 30 * time.Minute, true},
		{"not yet", StateRunning, 0, now.Add(-29 * time.Minute), 30 * time.Minute, false},
		{"live session", StateRunning, 1, now.Add(-5 * time.Hour), 30 * time.Minute, false},
		{"stopped", StateStopped, 0, now.Add(-5 * time.Hour), 30 * time.Minute, false},
		{"never stop", StateRunning, 0, now.Add(-5 * time.Hour), 0, false},
		{"no activity recorded", StateRunning, 0, time.Time{}, 30 * time.Minute, false},
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
		{Meta: Meta{MemoryCap: 4 * gib}, State: StateRunning},
		{Meta: Meta{MemoryCap: 8 * gib}, State: StateStopped},
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
