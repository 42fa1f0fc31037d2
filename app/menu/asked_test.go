package menu

import (
	"github.com/corral-dev/corral/core/boxstate"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// The inbox lists a box's requests with their reason and process (the
// box's words, made safe), offers the denied-host scopes for a host and
// Deny for both, and nothing to allow for a port.
func TestAskedItem(t *testing.T) {
	asked := []BoxRequest{
		{Request: "registry.example.test", Why: "npm install\x1b[2J needs it\u202e", Who: "node (pid 42, npm < bash, session tests)", Time: now.Add(-2 * time.Minute)},
		{Request: "port 3000", IsPort: true, Why: "dev server", Time: now.Add(-time.Minute)},
	}
	m := Build(State{Boxes: []BoxView{{Name: "web", State: boxstate.Running, Asked: asked}}}, UI{Now: now}, Limits{})
	byKey := map[string]Item{}
	walk(m, func(it Item) {
		byKey[it.Key] = it
		for _, s := range []string{it.Title, it.Tooltip} {
			if strings.ContainsFunc(s, display.Unsafe) {
				t.Errorf("item %q carries an unsafe rune: %q", it.Key, s)
			}
		}
		if it.Action.Kind == ActAllow && it.Action.Host != "registry.example.test" {
			t.Errorf("Allow offered for %q", it.Action.Host)
		}
	})
	if it := byKey["box/web"]; !strings.Contains(it.Title, "· 2 asked") {
		t.Errorf("box title %q does not count the requests", it.Title)
	}
	in := byKey["box/web/asked"]
	if in.Hidden || in.Title != "Requests from the box (2)" || len(in.Children) != 2 || in.Children[0].Key != "box/web/asked/port 3000" {
		t.Fatalf("inbox: %+v", in)
	}
	host := "box/web/asked/registry.example.test"
	if got := byKey[host+"/why"].Title; got != `“npm install\x1b[2J needs it\u202e”` {
		t.Errorf("reason shown as %q", got)
	}
	if got := byKey[host+"/who"].Title; got != "asked by node (pid 42, npm < bash, session tests)" {
		t.Errorf("process shown as %q", got)
	}
	for _, s := range []string{"allow-once", "allow-hour", "allow-session", "allow-always"} {
		if a := byKey[host+"/"+s].Action; a.Kind != ActAllow || a.Box != "web" || a.Host != "registry.example.test" {
			t.Errorf("%s: %+v", s, a)
		}
	}
	if a := byKey[host+"/deny"].Action; a.Kind != ActDenyRequest || a.Host != "registry.example.test" {
		t.Errorf("deny: %+v", a)
	}
	if a := byKey["box/web/asked/port 3000/deny"].Action; a.Kind != ActDenyRequest || a.Host != "port 3000" {
		t.Errorf("port deny: %+v", a)
	}
	if _, ok := byKey["box/web/asked/port 3000/allow-once"]; ok {
		t.Error("a port request offers Allow")
	}
	// No requests: the entry keeps its slot, hidden.
	m = Build(State{Boxes: []BoxView{{Name: "web", State: boxstate.Running}}}, UI{Now: now}, Limits{})
	walk(m, func(it Item) {
		if it.Key == "box/web/asked" && !it.Hidden {
			t.Error("empty inbox shown")
		}
	})
}
