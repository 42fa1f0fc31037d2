package menu

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
)

// TestProjectsMenu: recent projects (with a box or not) first, newest
// first, then the repositories under project_roots that are not listed
// already, then "Open folder…".
func TestProjectsMenu(t *testing.T) {
	st := State{
		Projects: []Project{
			{Dir: "/home/u/src/web", Box: "web-3f2a1c", LastUsed: now.Add(-time.Hour)},
			{Dir: "/home/u/old/idea", LastUsed: now},    // recent, its box removed
			{Dir: "/home/u/src/web", Box: "web-3f2a1c"}, // the same folder twice
		},
		Repos: []Project{
			{Dir: "/home/u/src/web"}, // has a box: listed above
			{Dir: "/home/u/src/api"},
			{Dir: "/home/u/src/cli"},
		},
		Roots: []string{"~/src"},
	}
	m := Build(st, UI{Now: now}, Limits{})
	it, _ := m.Find("projects")
	var got strings.Builder
	writeItems(&got, it.Children, 0)
	want := `idea (new box)
web
In ~/src [disabled]
api (new box)
cli (new box)
Open folder…
`
	if got.String() != want {
		t.Fatalf("projects:\n%s\nwant:\n%s", got.String(), want)
	}
	for key, act := range map[string]Action{
		"project//home/u/old/idea": {Kind: ActOpenProject, Project: "/home/u/old/idea"},
		"project//home/u/src/web":  {Kind: ActOpenProject, Project: "/home/u/src/web", Box: "web-3f2a1c"},
		"repo//home/u/src/api":     {Kind: ActOpenProject, Project: "/home/u/src/api"},
		"projects/open-folder":     {Kind: ActOpenFolder},
	} {
		if it, ok := m.Find(key); !ok || it.Action != act {
			t.Errorf("%s: %+v (found %v), want %+v", key, it.Action, ok, act)
		}
	}

	// Only repositories: no "No projects yet" line.
	m = Build(State{Repos: []Project{{Dir: "/r/a"}}, Roots: []string{"/r", "~/work"}}, UI{}, Limits{})
	it, _ = m.Find("projects")
	got.Reset()
	writeItems(&got, it.Children, 0)
	if want := "In /r, ~/work [disabled]\na (new box)\nOpen folder…\n"; got.String() != want {
		t.Errorf("repos only:\n%s\nwant:\n%s", got.String(), want)
	}
}

func TestProjectsMenuCaps(t *testing.T) {
	var st State
	for i := range 30 {
		st.Projects = append(st.Projects, Project{Dir: fmt.Sprintf("/p/recent%02d", i), LastUsed: now.Add(time.Duration(i) * time.Minute)})
		st.Repos = append(st.Repos, Project{Dir: fmt.Sprintf("/r/repo%02d", i)})
	}
	m := Build(st, UI{}, Limits{MaxProjects: 4, MaxRepos: 3})
	it, _ := m.Find("projects")
	var got strings.Builder
	writeItems(&got, it.Children, 0)
	want := `recent29 (new box)
recent28 (new box)
recent27 (new box)
recent26 (new box)
In project_roots [disabled]
repo00 (new box)
repo01 (new box)
repo02 (new box)
Open folder…
`
	if got.String() != want {
		t.Errorf("capped:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestSessionsMenu: a running box lists each detachable session with
// Attach, most recently active first, within fixed slots.
func TestSessionsMenu(t *testing.T) {
	web := BoxView{Name: "web-3f2a1c", Project: "/home/u/src/web", State: boxstate.Running, MemBytes: gib, Detached: []SessionView{
		{Name: "claude", Agent: "claude", Attached: 1, Activity: now.Add(-10 * time.Second)},
		{Name: "tests", Agent: "shell", Activity: now.Add(-12 * time.Minute)},
		{Name: "old", Agent: ""},
	}}
	m := Build(State{Boxes: []BoxView{web}}, UI{Now: now}, Limits{})
	box, _ := m.Find("box/web-3f2a1c")
	var got strings.Builder
	writeItems(&got, box.Children, 0)
	want := `Open Claude session
Open shell
Attach claude · active · 1 attached
Attach tests (shell) · quiet 12m
Attach old
Stop
Review last session
Show egress log
Reveal project
Rebuild…
`
	if got.String() != want {
		t.Fatalf("box submenu:\n%s\nwant:\n%s", got.String(), want)
	}
	it, _ := m.Find("box/web-3f2a1c/attach/tests")
	if it.Action != (Action{Kind: ActAttach, Box: "web-3f2a1c", Session: "tests"}) {
		t.Errorf("action %+v", it.Action)
	}
	if !strings.Contains(it.Tooltip, "corral attach web-3f2a1c tests") || !strings.Contains(it.Tooltip, "may be waiting for you, or working silently") {
		t.Errorf("tooltip %q", it.Tooltip)
	}

	// A stopped box shows no sessions (the list is stale); more than the
	// cap says how many more.
	stopped := web
	stopped.State = boxstate.Stopped
	m = Build(State{Boxes: []BoxView{stopped}}, UI{Now: now}, Limits{})
	if strings.Contains(m.Text(), "Attach") {
		t.Errorf("stopped box lists sessions:\n%s", m.Text())
	}
	many := web
	many.Detached = nil
	for i := range 8 {
		many.Detached = append(many.Detached, SessionView{Name: fmt.Sprintf("s%d", i), Activity: now})
	}
	m = Build(State{Boxes: []BoxView{many}}, UI{Now: now}, Limits{MaxSessions: 5})
	if more, _ := m.Find("box/web-3f2a1c/attach/more"); more.Hidden || more.Title != "+ 3 more sessions (corral sessions)" {
		t.Errorf("more item %+v", more)
	}
	// The shape (children by position) is the same with 0 and 8 sessions.
	a := Build(State{Boxes: []BoxView{web}}, UI{}, Limits{})
	b := Build(State{Boxes: []BoxView{many}}, UI{}, Limits{})
	ba, _ := a.Find("box/web-3f2a1c")
	bb, _ := b.Find("box/web-3f2a1c")
	if len(ba.Children) != len(bb.Children) {
		t.Errorf("submenu has %d slots with 3 sessions, %d with 8", len(ba.Children), len(bb.Children))
	}
}
