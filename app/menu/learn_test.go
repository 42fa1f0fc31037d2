package menu

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
)

// A learning box says so in its title and tooltip; others do not.
func TestBoxTitleLearning(t *testing.T) {
	b := BoxView{Name: "web-3f2a1c", State: boxstate.Running, MemBytes: gib, MemCapBytes: 4 * gib, Sessions: 1, LearningUntil: now}
	if got, want := BoxTitle(b, 40), "● web-3f2a1c  1 GiB / 4 GiB · 1 session · learning"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	m := Build(State{Boxes: []BoxView{b}}, UI{}, Limits{})
	found := false
	for _, sec := range m.Sections {
		for _, it := range sec.Items {
			if strings.Contains(it.Title, "web-3f2a1c") && strings.Contains(it.Tooltip, "learning until ") && strings.Contains(it.Tooltip, "corral egress learn web-3f2a1c") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no box item with the learning tooltip: %+v", m)
	}
	b.LearningUntil = time.Time{}
	if strings.Contains(BoxTitle(b, 40), "learning") {
		t.Error("a box that does not learn says learning")
	}
}

// A box the low-memory rule saved says so in its title and tooltip; one
// saved by hand, or stopped, does not.
func TestBoxTitleSavedLowMemory(t *testing.T) {
	b := BoxView{Name: "web-3f2a1c", State: boxstate.Saved, SavedLowMemory: true, SavedAt: now, IdleStop: 30 * time.Minute}
	if got, want := BoxTitle(b, 40), "○ web-3f2a1c  saved for low memory"; got != want {
		t.Errorf("title %q, want %q", got, want)
	}
	m := Build(State{Boxes: []BoxView{b}}, UI{}, Limits{})
	found := false
	for _, sec := range m.Sections {
		for _, it := range sec.Items {
			if strings.Contains(it.Title, "saved for low memory") && strings.Contains(it.Tooltip, "the host ran short of memory (save_when_free_below)") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no box item saved for low memory: %+v", m)
	}
	for _, o := range []BoxView{{Name: "a", State: boxstate.Saved}, {Name: "b", State: boxstate.Stopped, SavedLowMemory: true}} {
		if got := BoxTitle(o, 40); strings.Contains(got, "low memory") {
			t.Errorf("%+v: title %q", o, got)
		}
	}
}
