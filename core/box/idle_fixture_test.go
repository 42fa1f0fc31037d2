package box_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/paths"
)

// TestSweepStopsWhatIdleBoxesLists: the fixture's idle box, and only it,
// is listed, marked IdleDue, and stopped by the sweep with an idle-stop
// audit event. The app's and the CLI's tests check their views of the same
// fixture.
func TestSweepStopsWhatIdleBoxesLists(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	now := time.Now()
	want := boxtest.IdleFixture(t, l, now)
	s, fake := boxtest.Service(l, now, audit.ActorSweep)

	list, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var due []string
	for _, st := range list {
		if st.IdleDue {
			due = append(due, st.Name)
		}
		if st.Name == "net-a1b2c3" && st.Idle > 2*time.Minute {
			t.Errorf("net-a1b2c3: idle %v, but its broker logged a decision a minute ago", st.Idle)
		}
	}
	if !slices.Equal(due, want) {
		t.Errorf("IdleDue boxes %q, want %q", due, want)
	}

	stopped, err := s.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stopped, want) {
		t.Errorf("Sweep stopped %q, want %q", stopped, want)
	}
	if calls := fake.Calls(); len(calls) != 1 || !slices.Equal(calls[0], []string{"stop", "idle-a1b2c3"}) {
		t.Errorf("limactl calls %q", calls)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != audit.KindIdleStop || evs[0].Box != "idle-a1b2c3" {
		t.Errorf("audit events %+v", evs)
	}
	if again, _ := s.IdleBoxes(); len(again) != 0 {
		t.Errorf("after the sweep, still idle: %v", again)
	}
}
