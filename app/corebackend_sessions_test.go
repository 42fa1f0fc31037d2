package app

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
)

// TestDetachedNeverWaits: the menu's sessions come from an ssh round trip
// into the box, which may hang; Snapshot must never wait for it. The first
// call returns at once (nothing known yet), one ask runs at a time, the
// answer shows from the next call on, and a failed ask keeps the last list.
func TestDetachedNeverWaits(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	var fail atomic.Bool
	b := &coreBackend{guestSessions: func(ctx context.Context, name string) ([]box.GuestSession, error) {
		calls.Add(1)
		<-release
		if fail.Load() {
			return nil, errors.New("ssh: connection timed out")
		}
		return []box.GuestSession{{Box: name, Name: "claude", Agent: "claude", Attached: 1, Activity: time.Unix(100, 0)}}, nil
	}}
	st := box.Status{Meta: boxmeta.Meta{Name: "web-1"}, State: boxstate.Running}
	start := time.Now()
	for range 5 {
		if got := b.detached(st, time.Now()); got != nil {
			t.Fatalf("before any answer: %+v", got)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("detached waited %v for the box", d)
	}
	release <- struct{}{}
	want := []menu.SessionView{{Name: "claude", Agent: "claude", Attached: 1, Activity: time.Unix(100, 0)}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		got := b.detached(st, time.Now())
		if len(got) == 1 && got[0] == want[0] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("answer never shown: %+v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d asks in flight at once, want 1", n)
	}
	// Stale: asked again; the ask fails; the last list stays.
	fail.Store(true)
	later := time.Now().Add(sessionsTTL)
	if got := b.detached(st, later); len(got) != 1 {
		t.Errorf("stale list dropped: %+v", got)
	}
	close(release)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b.mu.Lock()
		pending := b.sessions["web-1"].pending
		b.mu.Unlock()
		if !pending {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed ask never finished")
		}
	}
	if got := b.detached(st, time.Now()); len(got) != 1 || calls.Load() != 2 {
		t.Errorf("after a failed ask: %+v (%d asks)", got, calls.Load())
	}
	// A stopped box has none and is not asked.
	if got := b.detached(box.Status{Meta: boxmeta.Meta{Name: "api-1"}, State: boxstate.Stopped}, time.Now()); got != nil || calls.Load() != 2 {
		t.Errorf("stopped box: %+v (%d asks)", got, calls.Load())
	}
}
