package app

import (
	"testing"
	"time"
)

// The remote read schedule: every period while a host answers quickly;
// after a failure or a slow read (a touch), twice as long each time, at
// most Max; back to the period after one quick success. Opening the menu
// reads a healthy host 10 s after its last read, a backing-off one only
// when it is due.
func TestReadSchedule(t *testing.T) {
	s := readSchedule{Base: 30 * time.Second, OpenAge: 10 * time.Second, Max: 4 * time.Minute, Slow: 5 * time.Second}
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var h hostReads
	if !s.due(h, t0, false) || !s.due(h, t0, true) {
		t.Fatal("a host never read is not due")
	}
	// read runs one read from at for took, failing or not, and returns
	// the time of the next tick-driven read (ticks every Base from t0).
	read := func(at time.Time, took time.Duration, failed bool) {
		h = s.start(h, at)
		if s.due(h, at.Add(took/2), false) {
			t.Fatalf("due while its read is under way")
		}
		h = s.done(h, at.Add(took), failed)
	}
	nextTick := func(after time.Time) time.Time {
		for tick := t0; ; tick = tick.Add(s.Base) {
			if tick.After(after) && s.due(h, tick, false) {
				return tick
			}
		}
	}
	at := t0
	read(at, time.Second, false)
	if got := nextTick(at); got.Sub(at) != 30*time.Second {
		t.Errorf("healthy: next read after %s, want 30s", got.Sub(at))
	}
	// Opening the menu: 5 s after the read, no; 12 s after, yes.
	if s.due(h, at.Add(5*time.Second), true) || !s.due(h, at.Add(12*time.Second), true) {
		t.Error("opening the menu: healthy host read too early or not at all")
	}
	// Failures (or slow reads: a touch) double the wait, up to Max.
	for i, want := range []time.Duration{60 * time.Second, 120 * time.Second, 240 * time.Second, 240 * time.Second} {
		at = nextTick(at)
		slow := i%2 == 1
		read(at, map[bool]time.Duration{true: 8 * time.Second, false: time.Second}[slow], !slow)
		if got := nextTick(at); got.Sub(at) != want {
			t.Errorf("after %d failed or slow reads: next after %s, want %s", i+1, got.Sub(at), want)
		}
		// Opening the menu does not bypass the backoff.
		if s.due(h, at.Add(20*time.Second), true) {
			t.Errorf("after %d failed or slow reads: opening the menu reads the host 20 s later", i+1)
		}
	}
	// One quick success: back to every period.
	at = nextTick(at)
	read(at, time.Second, false)
	if h.failures != 0 || nextTick(at).Sub(at) != 30*time.Second {
		t.Errorf("after a success: %d failures, next after %s", h.failures, nextTick(at).Sub(at))
	}
}
