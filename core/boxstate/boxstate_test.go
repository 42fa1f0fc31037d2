package boxstate

import (
	"testing"

	"github.com/corral-dev/corral/core/lima"
)

// TestTransitions is the machine's table, written out: every state and
// event, and where the event moves the state ("" where it does not apply).
func TestTransitions(t *testing.T) {
	events := []Event{Create, Provisioned, ProvisionFailed, Start, Stop, Save, Halted, SavedState, Break, Remove}
	want := map[State][]State{
		//            create        provisioned provision-failed start  stop      save      halted   saved break   remove
		Missing:      {Provisioning, "", "", "", "", "", "", "", "", Missing},
		Provisioning: {Provisioning, Running, Failed, "", "", "", Stopped, "", Broken, Missing},
		Failed:       {Provisioning, "", "", "", Stopping, "", "", "", Broken, ""},
		Stopped:      {Provisioning, "", "", Starting, "", "", "", "", "", Missing},
		Saved:        {Provisioning, "", "", Starting, Stopped, "", "", "", "", Missing},
		Starting:     {"", Running, Failed, "", "", "", Stopped, "", Broken, ""},
		Stopping:     {"", "", "", "", "", "", Stopped, Saved, Broken, ""},
		Running:      {Provisioning, "", "", "", Stopping, Stopping, "", "", Broken, ""},
		Broken:       {Provisioning, "", "", "", Stopping, "", "", "", "", ""},
	}
	if len(want) != len(All) {
		t.Fatalf("the test covers %d states, the machine has %d", len(want), len(All))
	}
	for _, s := range All {
		row, ok := want[s]
		if !ok {
			t.Fatalf("state %s missing from the test", s)
		}
		for i, e := range events {
			got, ok := s.Next(e)
			if !ok {
				got = ""
			}
			if got != row[i] {
				t.Errorf("%s --%s--> %q, want %q", s, e, got, row[i])
			}
			if s.Can(e) != (row[i] != "") {
				t.Errorf("%s.Can(%s) = %v", s, e, s.Can(e))
			}
		}
	}
	// Every state the table names is a state of All, and every state but
	// Missing can be left and reached.
	reached := map[State]bool{}
	for from, row := range table {
		for _, to := range row {
			reached[to] = true
			if !known(to) || !known(from) {
				t.Errorf("table names an unknown state: %s -> %s", from, to)
			}
		}
	}
	for _, s := range All {
		if !reached[s] {
			t.Errorf("no event leads to %s", s)
		}
	}
}

func known(s State) bool {
	for _, a := range All {
		if a == s {
			return true
		}
	}
	return false
}

func TestOf(t *testing.T) {
	for _, tc := range []struct {
		f    Facts
		want State
	}{
		{Facts{VM: Missing}, Missing},
		{Facts{VM: Stopped}, Stopped},
		{Facts{VM: Running}, Running},
		{Facts{VM: Broken}, Broken},
		{Facts{VM: Running, Provisioning: true}, Provisioning},
		{Facts{VM: Missing, Provisioning: true}, Provisioning},
		{Facts{VM: Running, ProvisionFailed: true}, Failed},
		{Facts{VM: Stopped, ProvisionFailed: true}, Stopped},
		{Facts{VM: Stopped, Saved: true}, Saved},
		{Facts{VM: Running, Saved: true}, Running}, // resumed: the mark is stale
		{Facts{VM: Broken, Saved: true}, Broken},
	} {
		if got := Of(tc.f); got != tc.want {
			t.Errorf("Of(%+v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func TestFromLima(t *testing.T) {
	for st, want := range map[lima.Status]State{
		lima.StatusRunning: Running, lima.StatusStopped: Stopped, lima.StatusBroken: Broken,
		lima.StatusUnknown: Missing, lima.StatusInstalling: Broken, lima.StatusUninitialized: Broken,
	} {
		if got := FromLima(st); got != want {
			t.Errorf("FromLima(%q) = %s, want %s", st, got, want)
		}
	}
}

func TestUpBusy(t *testing.T) {
	for _, s := range All {
		if s.Up() != (s == Running || s == Failed) {
			t.Errorf("%s.Up() = %v", s, s.Up())
		}
		if s.Busy() != (s == Provisioning || s == Starting || s == Stopping) {
			t.Errorf("%s.Busy() = %v", s, s.Busy())
		}
	}
}

var allEvents = []Event{Create, Provisioned, ProvisionFailed, Start, Stop, Save, Halted, SavedState, Break, Remove}

// FuzzTransitions walks the machine with any sequence of events from
// Missing: every state reached is a known one, and the rules the lifecycle
// relies on hold on every path: a box whose VM is up (or whose processes
// disagree) is never removed without force, never started again, and only
// a running box is saved.
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{0, 1, 4, 6, 3, 1, 5, 7, 3, 2, 4, 6, 9})
	f.Fuzz(func(t *testing.T, seq []byte) {
		s := Missing
		for _, b := range seq {
			e := allEvents[int(b)%len(allEvents)]
			next, ok := s.Next(e)
			if !ok {
				continue
			}
			switch {
			case !known(next):
				t.Fatalf("%s --%s--> unknown state %q", s, e, next)
			case e == Remove && (s.Up() || s == Broken):
				t.Fatalf("%s is removed without force", s)
			case e == Start && s.Up():
				t.Fatalf("%s is started again", s)
			case e == Save && s != Running:
				t.Fatalf("%s is saved", s)
			}
			s = next
		}
	})
}
