package menu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/display"
)

// walk calls fn for every item of m, children included.
func walk(m Menu, fn func(Item)) {
	var rec func([]Item)
	rec = func(items []Item) {
		for _, it := range items {
			fn(it)
			rec(it.Children)
		}
	}
	for _, s := range m.Sections {
		rec(s.Items)
	}
}

// Denied requests as a hostile box sends them: look-alike names, escape
// sequences, bidi overrides, long names, malformed text, wildcards.
func TestHostileDeniedHosts(t *testing.T) {
	denied := []DeniedHost{
		{Host: "xn--gthub-n2e.com", Port: 443, Count: 1, Last: now},                                   // gіthub.com (Cyrillic і)
		{Host: "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.registrable.example", Port: 443, Count: 1, Last: now}, // long
		{Host: "\x1b[2J\x1b[Hall clear", Port: 0, Count: 9, Last: now, Malformed: true},
		{Host: "*.com", Port: 443, Count: 1, Last: now},                            // not a host the broker parses
		{Host: "evil\u202ecom.txt", Port: 443, Count: 1, Last: now},                // bidi override, unparsed
		{Host: "gіthub.com", Port: 443, Count: 1, Last: now},                       // raw Unicode: not canonical
		{Host: "ok.example.test", Port: 443, Count: 1, Last: now, Malformed: true}, // reason says malformed
	}
	m := Build(State{Boxes: []BoxView{{Name: "web", State: boxstate.Running, Denied: denied}}}, UI{}, Limits{MaxDenied: 20})
	allowed := map[string]bool{}
	walk(m, func(it Item) {
		for _, s := range []string{it.Title, it.Tooltip} {
			if strings.ContainsFunc(s, display.Unsafe) {
				t.Errorf("item %q carries an unsafe rune: %q", it.Key, s)
			}
		}
		if it.Action.Kind == ActAllow {
			allowed[it.Action.Host] = true
		}
	})
	for h := range allowed {
		switch h {
		case "xn--gthub-n2e.com", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.registrable.example", "registrable.example":
		default:
			t.Errorf("Allow offered for %q", h)
		}
	}
	text := m.Text()
	for _, want := range []string{
		"xn--gthub-n2e.com (gіthub.com):443", // punycode first, Unicode beside
		"registrable.example:443",            // cut from the left: the end stays
		`\x1b[2J\x1b[Hall clear`,             // escaped
		"Malformed request: cannot be allowed",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("menu lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Allow *.com") {
		t.Errorf("menu offers a wildcard over a public suffix:\n%s", text)
	}
}

// For any names, errors and denied hosts, no title or tooltip carries an
// unsafe rune and Allow is only offered for hosts that parse canonically.
func TestBuildNeverShowsUnsafeText(t *testing.T) {
	parts := []string{"a", ".", ":", "com", "\x1b[31m", "\u202e", "\u200b", "і", "xn--", "\xff", "\n", "*", "@", "日"}
	r := rand.New(rand.NewPCG(7, 8))
	gen := func() string {
		var b strings.Builder
		for n := r.IntN(12); n > 0; n-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		return b.String()
	}
	for range 500 {
		var ds []DeniedHost
		for range 5 {
			ds = append(ds, DeniedHost{Host: gen(), Port: r.IntN(3) * 443, Count: 1, Last: now, Malformed: r.IntN(2) == 0, Who: gen()})
		}
		var asked []BoxRequest
		for range 3 {
			asked = append(asked, BoxRequest{Request: gen(), IsPort: r.IntN(4) == 0, Why: gen(), Who: gen(), Time: now})
		}
		asked = append(asked, BoxRequest{Request: "ok.example.test:8443", Why: gen(), Who: gen(), Time: now})
		st := State{Boxes: []BoxView{{Name: gen(), State: boxstate.Running, Err: gen(), Denied: ds, Asked: asked,
			Detached: []SessionView{{Name: gen(), Agent: gen(), Activity: now}}}},
			Projects: []Project{{Name: gen(), Dir: "/p/" + gen()}},
			Repos:    []Project{{Dir: "/r/" + gen()}}, Roots: []string{gen()}}
		m := Build(st, UI{LastError: gen(), SnapshotErr: gen()}, Limits{})
		walk(m, func(it Item) {
			for _, s := range []string{it.Title, it.Tooltip} {
				if strings.ContainsFunc(s, display.Unsafe) {
					t.Fatalf("item %q carries an unsafe rune: %q", it.Key, s)
				}
			}
			if it.Action.Kind == ActAllow && it.Action.Scope != AllowDomain {
				if !Allowable(DeniedHost{Host: it.Action.Host, Port: 443}) && !Allowable(DeniedHost{Host: it.Action.Host, Port: 1}) &&
					!RequestAllowable(BoxRequest{Request: it.Action.Host}) {
					t.Fatalf("Allow offered for %q", it.Action.Host)
				}
			}
		})
	}
}
