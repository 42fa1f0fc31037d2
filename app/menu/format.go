package menu

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// FormatBytes renders a byte count in binary units with at most one
// decimal, dropping ".0": 0 B, 512 MiB, 1.2 GiB, 4 GiB.
func FormatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n) / unit
	i := 0
	for v >= unit && i < len(units)-1 {
		v /= unit
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 100 {
		s = strconv.FormatFloat(v, 'f', 0, 64)
	}
	s = strings.TrimSuffix(s, ".0")
	return s + " " + units[i]
}

// FormatDuration renders a coarse duration: 45s, 12m, 3h, 3h20m, 2d.
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		h := int(d / time.Hour)
		m := int((d % time.Hour) / time.Minute)
		if m == 0 || h >= 10 {
			return fmt.Sprintf("%dh", h)
		}
		return fmt.Sprintf("%dh%dm", h, m)
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// FormatWhen renders t relative to now: "15:04" on the same day, "Mon
// 15:04" within a week, "Jan 2" otherwise. Both are shown in now's location.
func FormatWhen(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if now.IsZero() {
		now = t
	}
	t = t.In(now.Location())
	y1, m1, d1 := t.Date()
	y2, m2, d2 := now.Date()
	switch {
	case y1 == y2 && m1 == m2 && d1 == d2:
		return t.Format("15:04")
	case now.Sub(t) < 6*24*time.Hour && now.Sub(t) > 0:
		return t.Format("Mon 15:04")
	default:
		return t.Format("Jan 2")
	}
}

// Truncate shortens s to at most max runes, ending in "…" when cut. It is
// for display only: keys and actions always carry the full name.
//
// It also escapes what must not reach a menu (core/display): names and
// errors can come from a repository or a box. Host names go through
// display.Host instead, which cuts from the left.
func Truncate(s string, max int) string {
	if max <= 0 {
		max = display.MaxText
	}
	return display.Text(s, max)
}

// Text renders the menu one visible item per line, two spaces of indent per
// level, "----" for a section separator, " [disabled]" and " >" (has a submenu)
// suffixes. Hidden items are left out. It is the format
// the D-Bus tests print from com.canonical.dbusmenu.GetLayout, so a model
// and a live menu can be compared line by line.
func (m Menu) Text() string {
	var b strings.Builder
	for _, s := range m.Sections {
		if s.SeparatorBefore {
			b.WriteString("----\n")
		}
		writeItems(&b, s.Items, 0)
	}
	return b.String()
}

func writeItems(b *strings.Builder, items []Item, depth int) {
	for _, it := range items {
		if it.Hidden {
			continue
		}
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(it.Title)
		if it.Disabled {
			b.WriteString(" [disabled]")
		}
		if len(it.Children) > 0 {
			b.WriteString(" >")
		}
		b.WriteString("\n")
		writeItems(b, it.Children, depth+1)
	}
}

// Find returns the item with key, depth first, and whether it exists.
func (m Menu) Find(key string) (Item, bool) {
	for _, s := range m.Sections {
		if it, ok := findItem(s.Items, key); ok {
			return it, true
		}
	}
	return Item{}, false
}

func findItem(items []Item, key string) (Item, bool) {
	for _, it := range items {
		if it.Key == key {
			return it, true
		}
		if c, ok := findItem(it.Children, key); ok {
			return c, true
		}
	}
	return Item{}, false
}
