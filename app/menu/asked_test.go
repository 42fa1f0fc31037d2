package menu

import (
	"github.com/corral-dev/corral/core/boxstate"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
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

// TestThisMachineMarked: a request or a denial for a host that names this
// computer (localhost, loopback) is marked "this machine" in its title,
// with what allowing it means beside it; other hosts are not, and the
// Allow still grants exactly the host asked for.
func TestThisMachineMarked(t *testing.T) {
	b := BoxView{Name: "web", State: boxstate.Running,
		Asked: []BoxRequest{
			{Request: "localhost:5432", Why: "the tests need the database", Time: now.Add(-time.Minute)},
			{Request: "registry.example.test", Why: "npm", Time: now.Add(-2 * time.Minute)},
		},
		Denied: []DeniedHost{
			{Host: "127.0.0.1", Port: 6379, Count: 2, Last: now.Add(-time.Minute)},
			{Host: "api.example.test", Port: 443, Count: 1, Last: now.Add(-2 * time.Minute)},
		}}
	m := Build(State{Boxes: []BoxView{b}}, UI{Now: now}, Limits{})
	byKey := map[string]Item{}
	walk(m, func(it Item) { byKey[it.Key] = it })

	local := byKey["box/web/asked/localhost:5432"]
	if !strings.HasPrefix(local.Title, "localhost:5432 (this machine) · ") || !strings.Contains(local.Tooltip, egress.ThisMachineWhy) {
		t.Errorf("local request: %q / %q", local.Title, local.Tooltip)
	}
	if it := byKey["box/web/asked/localhost:5432/this-machine"]; it.Hidden || !it.Disabled || !strings.Contains(it.Title, "This machine") {
		t.Errorf("local request's warning: %+v", it)
	}
	if a := byKey["box/web/asked/localhost:5432/allow-once"].Action; a.Host != "localhost:5432" {
		t.Errorf("local request's Allow grants %q", a.Host)
	}
	other := byKey["box/web/asked/registry.example.test"]
	if strings.Contains(other.Title+other.Tooltip, "this machine") || !byKey["box/web/asked/registry.example.test/this-machine"].Hidden {
		t.Errorf("a public host marked: %+v", other)
	}
	if d := byKey["box/web/denied/127.0.0.1:6379"]; !strings.HasPrefix(d.Title, "127.0.0.1:6379 (this machine) · 2× · ") || !strings.Contains(d.Tooltip, egress.ThisMachineWhy) {
		t.Errorf("local denial: %q / %q", d.Title, d.Tooltip)
	}
	if d := byKey["box/web/denied/api.example.test:443"]; strings.Contains(d.Title+d.Tooltip, "this machine") {
		t.Errorf("a public denial marked: %+v", d)
	}
}
