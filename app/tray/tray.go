// Package tray renders a menu.Menu with fyne.io/systray and reports clicks.
//
// systray (v1.12.0) can append items and hide them, but not insert or
// reorder, and removing an item can crash the process: its click delivery
// looks the item up, drops the lock, then sends on the item's channel,
// which Remove may have closed in between (fixed upstream in v1.12.1). So
// the tray never removes anything. It keeps a tree of slots: each top-level
// section reserves Section.Cap slots (and its separator) the first time,
// submenus grow by appending, and an Apply only changes the title, enabled
// flag and visibility of slots whose value differs. An idle refresh that
// changes nothing therefore sends nothing over D-Bus.
//
// Clicks: systray drops a click when nobody is receiving on the item's
// ClickedCh at that instant, so every slot has its own goroutine that
// receives and forwards the click, with the slot's current key and action
// (read atomically, as of the click), on a buffered channel to the app's
// event loop.
package tray

import (
	"sync/atomic"

	"fyne.io/systray"

	"github.com/corral-dev/corral/app/menu"
)

// Click is one click on an enabled item.
type Click struct {
	Key    string
	Action menu.Action
}

type target struct {
	key    string
	action menu.Action
}

type slot struct {
	mi       *systray.MenuItem
	cur      atomic.Pointer[target] // nil when hidden, disabled or not clickable
	title    string
	disabled bool
	checked  bool
	hidden   bool
	children []*slot
}

// Tray owns the systray menu items. Apply must be called from one
// goroutine at a time (the app's event loop), after systray is ready.
type Tray struct {
	clicks   chan<- Click
	sections [][]*slot
	built    bool
}

// New returns a Tray that sends clicks on clicks. The channel should be
// buffered and drained by a loop that never blocks for long.
func New(clicks chan<- Click) *Tray { return &Tray{clicks: clicks} }

// Apply makes the systray menu show m.
func (t *Tray) Apply(m menu.Menu) {
	if !t.built {
		t.build(m)
	}
	for i, sec := range m.Sections {
		if i >= len(t.sections) {
			break // sections are fixed at build time
		}
		t.applyList(t.sections[i], sec.Items)
	}
}

// build creates the top-level slots; every slot starts hidden and empty.
func (t *Tray) build(m menu.Menu) {
	t.built = true
	for _, sec := range m.Sections {
		if sec.SeparatorBefore {
			systray.AddSeparator()
		}
		n := sec.Cap
		if n < len(sec.Items) {
			n = len(sec.Items)
		}
		slots := make([]*slot, n)
		for i := range slots {
			s := &slot{mi: systray.AddMenuItem("", ""), hidden: false}
			t.listen(s)
			s.mi.Hide()
			s.hidden = true
			slots[i] = s
		}
		t.sections = append(t.sections, slots)
	}
}

// applyList applies items to slots by position. Extra items beyond the
// slots are dropped (only possible at top level, where Build respects Cap).
func (t *Tray) applyList(slots []*slot, items []menu.Item) {
	for i, s := range slots {
		if i < len(items) {
			t.applySlot(s, items[i])
		} else {
			t.hide(s)
		}
	}
}

func (t *Tray) hide(s *slot) {
	s.cur.Store(nil)
	if !s.hidden {
		s.mi.Hide()
		s.hidden = true
	}
}

func (t *Tray) applySlot(s *slot, it menu.Item) {
	if it.Hidden {
		t.hide(s)
		return
	}
	if s.title != it.Title {
		s.mi.SetTitle(it.Title)
		s.title = it.Title
	}
	if it.Checked != s.checked {
		if it.Checked {
			s.mi.Check()
		} else {
			s.mi.Uncheck()
		}
		s.checked = it.Checked
	}
	disabled := it.Disabled
	if disabled != s.disabled {
		if disabled {
			s.mi.Disable()
		} else {
			s.mi.Enable()
		}
		s.disabled = disabled
	}
	for i, c := range it.Children {
		if i == len(s.children) {
			cs := &slot{mi: s.mi.AddSubMenuItem(c.Title, ""), title: c.Title}
			t.listen(cs)
			s.children = append(s.children, cs)
		}
		t.applySlot(s.children[i], c)
	}
	for _, cs := range s.children[len(it.Children):] {
		t.hide(cs)
	}
	if s.hidden {
		s.mi.Show()
		s.hidden = false
	}
	if disabled || it.Action.Kind == menu.ActNone {
		s.cur.Store(nil)
	} else {
		s.cur.Store(&target{key: it.Key, action: it.Action})
	}
}

// listen forwards s's clicks for the life of the process (slots are never
// removed, so ClickedCh is never closed).
func (t *Tray) listen(s *slot) {
	go func() {
		for range s.mi.ClickedCh {
			if tg := s.cur.Load(); tg != nil {
				t.clicks <- Click{Key: tg.key, Action: tg.action}
			}
		}
	}()
}
