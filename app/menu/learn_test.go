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
