package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/app/menu"
)

// TestCommandArgv: every menu action's command, and names from a box that
// must never reach an argv.
func TestCommandArgv(t *testing.T) {
	const c = "/opt/corral"
	for _, tt := range []struct {
		a    menu.Action
		want []string
	}{
		{menu.Action{Kind: menu.ActOpenSession, Box: "web-1", Project: "/src/web"}, []string{c, "claude", "-C", "/src/web"}},
		{menu.Action{Kind: menu.ActOpenProject, Project: "/src/-rf x"}, []string{c, "claude", "-C", "/src/-rf x"}},
		{menu.Action{Kind: menu.ActOpenShell, Box: "web-1", Project: "/src/web"}, []string{c, "shell", "-C", "/src/web"}},
		{menu.Action{Kind: menu.ActReviewRequests, Box: "web-1", Project: "/src/web"}, []string{c, "approve", "-C", "/src/web"}},
		{menu.Action{Kind: menu.ActAttach, Box: "web-1", Session: "claude"}, []string{c, "attach", "web-1", "claude"}},
	} {
		got, err := CommandArgv(c, tt.a)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%+v: %q, %v; want %q", tt.a, got, err, tt.want)
		}
	}
	for _, a := range []menu.Action{
		{Kind: menu.ActOpenSession, Box: "web-1"},                               // no project
		{Kind: menu.ActOpenProject, Project: "relative"},                        // not absolute
		{Kind: menu.ActAttach, Box: "web-1", Session: "-t/tmp/evil"},            // an option
		{Kind: menu.ActAttach, Box: "web-1", Session: "a;b"},                    // shell text
		{Kind: menu.ActAttach, Box: "web-1", Session: "x\x1b[2J"},               // escapes
		{Kind: menu.ActAttach, Box: "web-1", Session: ""},                       // empty
		{Kind: menu.ActAttach, Box: "--help", Session: "claude"},                // box an option
		{Kind: menu.ActAttach, Box: "Web 1", Session: "claude"},                 // not a box name
		{Kind: menu.ActAttach, Box: "web-1", Session: "CLAUDE"},                 // upper case
		{Kind: menu.ActAttach, Box: "web-1", Session: string(make([]byte, 40))}, // too long
		{Kind: menu.ActStop, Box: "web-1"},                                      // no terminal command
	} {
		if got, err := CommandArgv(c, a); err == nil {
			t.Errorf("%+v: %q, want an error", a, got)
		}
	}
}

func TestReviewArgv(t *testing.T) {
	got, err := ReviewArgv("/usr/bin/corral", "web-3f2a1c")
	if err != nil || strings.Join(got, " ") != "/usr/bin/corral review web-3f2a1c --open" {
		t.Errorf("ReviewArgv = %q, %v", got, err)
	}
	for _, bad := range []string{"", "-x", "--help", "a b", "../x", "Web"} {
		if _, err := ReviewArgv("corral", bad); err == nil {
			t.Errorf("ReviewArgv accepts box %q", bad)
		}
	}
}
