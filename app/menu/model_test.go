package menu

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
)

const gib = 1 << 30

var now = time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)

func TestBuildText(t *testing.T) {
	web := BoxView{Name: "web-3f2a1c", Project: "/home/u/src/web", State: boxstate.Running,
		MemBytes: 1288490189, PeakBytes: 2 * gib, MemCapBytes: 4 * gib, Idle: 12 * time.Minute, IdleDue: true}
	api := BoxView{Name: "api-77aa01", Project: "/home/u/src/api", State: boxstate.Stopped, MemCapBytes: 2 * gib}
	tests := []struct {
		name  string
		state State
		ui    UI
		lim   Limits
		want  string
	}{
		{
			name: "no boxes",
			want: `corral · no boxes yet [disabled]
----
Projects >
  No projects yet (run corral in a project) [disabled]
  Open folder…
Stop idle boxes (0) [disabled]
Open config
----
Quit corral
`,
		},
		{
			name:  "two boxes and projects",
			state: State{Boxes: []BoxView{web, api}, Projects: []Project{{Dir: "/home/u/src/web", Box: "web-3f2a1c", LastUsed: now.Add(-time.Hour)}, {Dir: "/home/u/src/new", LastUsed: now}}},
			want: `corral · 1 of 2 running · 1.2 GiB [disabled]
○ api-77aa01  stopped >
  Open Claude session
  Open shell
  Start
  Review last session
  Show egress log
  Reveal project
  Rebuild…
● web-3f2a1c  1.2 GiB / 4 GiB · idle 12m >
  Open Claude session
  Open shell
  Stop
  Review last session
  Show egress log
  Reveal project
  Rebuild…
----
Projects >
  new (new box)
  web
  Open folder…
Stop idle boxes (1)
Open config
----
Quit corral
`,
		},
		{
			name: "denials, errors and busy",
			state: State{Boxes: []BoxView{{
				Name: "web-3f2a1c", State: boxstate.Running, MemBytes: 512 << 20, Sessions: 2, Err: "vm agent not responding",
				Denied: []DeniedHost{
					{Host: "api.example.test", Port: 443, Count: 3, Last: now.Add(-2 * time.Minute)},
					{Host: "10.0.0.7", Port: 22, Count: 1, Last: now.Add(-50 * time.Hour)},
				},
				Credentials: []CredentialUse{{Name: "github", Uses: 1, Last: now.Add(-3 * time.Minute)}, {Name: "anthropic\x1b[31m", Uses: 12, Last: now.Add(-time.Minute)}},
			}}},
			ui: UI{Now: now, LastError: "stop web-3f2a1c: limactl stop: exit status 1", Busy: map[string]string{"web-3f2a1c": "Stopping"}},
			want: `corral · 1 of 1 running · 512 MiB [disabled]
⚠ stop web-3f2a1c: limactl stop: exit status 1 (click to dismiss)
● web-3f2a1c  512 MiB · 2 sessions · 2 denied · ⚠ >
  ⚠ vm agent not responding [disabled]
  Open Claude session [disabled]
  Open shell [disabled]
  Stopping… [disabled]
  Denied hosts (2) >
    api.example.test:443 · 3× · 14:58 >
      Allow once
      Allow for 1 hour
      Allow for this session
      Allow always
      Allow *.example.test
    10.0.0.7:22 · 1× · Sat 13:00 >
      Allow once
      Allow for 1 hour
      Allow for this session
      Allow always
  Credentials used (2) >
    anthropic\x1b[31m · 12 uses · last 14:59 [disabled]
    github · 1 use · last 14:57 [disabled]
  Review last session
  Show egress log
  Reveal project [disabled]
  Rebuild… [disabled]
----
Projects >
  No projects yet (run corral in a project) [disabled]
  Open folder…
Stop idle boxes (0) [disabled]
Open config
----
Quit corral
`,
		},
		{
			name:  "snapshot error, broken box, rebuild armed, long name",
			state: State{Boxes: []BoxView{{Name: "a-very-long-project-name-that-goes-on-and-on-1234ab", State: boxstate.Broken}}},
			ui:    UI{SnapshotErr: "open ~/.lima: permission denied", ConfirmRebuild: "a-very-long-project-name-that-goes-on-and-on-1234ab"},
			lim:   Limits{MaxTitle: 20},
			want: `⚠ cannot read box state: open ~/.lima: permission denied [disabled]
✕ a-very-long-project…  broken >
  Open Claude session [disabled]
  Open shell [disabled]
  Start
  Review last session
  Show egress log
  Reveal project [disabled]
  Click again to rebuild a-very-long-project…
----
Projects >
  No projects yet (run corral in a project) [disabled]
  Open folder…
Stop idle boxes (0) [disabled]
Open config
----
Quit corral
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Build(tc.state, tc.ui, tc.lim).Text()
			if got != tc.want {
				t.Errorf("menu:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestBuildManyBoxes(t *testing.T) {
	var st State
	for i := 0; i < 30; i++ {
		st.Boxes = append(st.Boxes, BoxView{Name: fmt.Sprintf("box-%02d", 29-i), State: boxstate.Running, MemBytes: gib, IdleDue: true})
	}
	m := Build(st, UI{}, Limits{MaxBoxes: 24})
	boxes := m.Sections[1]
	if boxes.Cap != 24 || len(boxes.Items) != 24 {
		t.Fatalf("boxes section cap %d, %d items; want 24, 24", boxes.Cap, len(boxes.Items))
	}
	if boxes.Items[0].Key != "box/box-00" || boxes.Items[23].Key != "box/box-23" {
		t.Errorf("boxes not sorted by name: first %q last %q", boxes.Items[0].Key, boxes.Items[23].Key)
	}
	text := m.Text()
	if !strings.HasPrefix(text, "corral · 30 of 30 running · 30 GiB [disabled]\n+ 6 more (corral list) [disabled]\n") {
		t.Errorf("header:\n%s", text)
	}
	if it, _ := m.Find("stop-idle"); it.Title != "Stop idle boxes (30)" || it.Disabled {
		t.Errorf("stop idle = %+v", it)
	}
}

// Every section stays within its capacity, and the tree shape (how many
// children an item has, by position) depends only on the number of boxes,
// denied hosts and projects, not on their state: the tray relies on that to
// reuse slots.
func TestShapeStableAcrossStates(t *testing.T) {
	shape := func(m Menu) string {
		var b strings.Builder
		var walk func([]Item)
		walk = func(items []Item) {
			b.WriteString("(")
			for _, it := range items {
				fmt.Fprintf(&b, "%d", len(it.Children))
				walk(it.Children)
			}
			b.WriteString(")")
		}
		for _, s := range m.Sections {
			if len(s.Items) > s.Cap {
				t.Errorf("section %s has %d items, cap %d", s.Key, len(s.Items), s.Cap)
			}
			walk(s.Items)
		}
		return b.String()
	}
	d := []DeniedHost{{Host: "a.example.test", Port: 443, Count: 1, Last: now}, {Host: "10.1.2.3", Port: 80, Count: 1, Last: now}}
	var shapes []string
	for _, st := range boxstate.All {
		for _, ui := range []UI{{}, {LastError: "x", ConfirmRebuild: "b", Busy: map[string]string{"b": "Starting"}}} {
			for _, n := range []int{0, 3} {
				m := Build(State{Boxes: []BoxView{{Name: "b", State: st, Denied: d, Err: "e", NewCommits: n}}}, ui, Limits{})
				shapes = append(shapes, shape(m))
			}
		}
	}
	for _, s := range shapes[1:] {
		if s != shapes[0] {
			t.Fatalf("shape changed with state:\n%s\n%s", shapes[0], s)
		}
	}
}

// TestPullItem: "Pull N new commits" shows for a running box with commits
// the host has not pulled, and only then.
func TestPullItem(t *testing.T) {
	tests := []struct {
		name  string
		box   BoxView
		ui    UI
		title string // "" = hidden
		off   bool
	}{
		{"nothing new", BoxView{Name: "web", State: boxstate.Running}, UI{}, "", false},
		{"one", BoxView{Name: "web", State: boxstate.Running, NewCommits: 1}, UI{}, "Pull 1 new commit", false},
		{"several", BoxView{Name: "web", State: boxstate.Running, NewCommits: 12}, UI{}, "Pull 12 new commits", false},
		{"stopped box (count is stale)", BoxView{Name: "web", State: boxstate.Stopped, NewCommits: 4}, UI{}, "", false},
		{"busy", BoxView{Name: "web", State: boxstate.Running, NewCommits: 2}, UI{Busy: map[string]string{"web": "Pulling"}}, "Pull 2 new commits", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(State{Boxes: []BoxView{tt.box}}, tt.ui, Limits{})
			it, ok := m.Find("box/web/pull")
			if !ok {
				t.Fatalf("no pull slot in\n%s", m.Text())
			}
			if tt.title == "" {
				if !it.Hidden {
					t.Errorf("shown: %+v", it)
				}
				return
			}
			if it.Hidden || it.Title != tt.title || it.Disabled != tt.off {
				t.Errorf("item %+v, want %q disabled=%v", it, tt.title, tt.off)
			}
			if it.Action != (Action{Kind: ActPull, Box: "web"}) {
				t.Errorf("action %+v", it.Action)
			}
		})
	}
}

func TestActionsAndKeys(t *testing.T) {
	m := Build(State{Boxes: []BoxView{{Name: "web", State: boxstate.Running, Project: "/p/web",
		Denied: []DeniedHost{{Host: "cdn.example.test", Port: 443, Count: 1, Last: now}}}}}, UI{}, Limits{})
	for key, want := range map[string]Action{
		"box/web/stop":    {Kind: ActStop, Box: "web"},
		"box/web/session": {Kind: ActOpenSession, Box: "web", Project: "/p/web"},
		"box/web/shell":   {Kind: ActOpenShell, Box: "web", Project: "/p/web"},
		"box/web/reveal":  {Kind: ActRevealProject, Box: "web", Project: "/p/web"},
		"box/web/rebuild": {Kind: ActArmRebuild, Box: "web"},
		"box/web/denied/cdn.example.test:443/allow-always":  {Kind: ActAllow, Box: "web", Host: "cdn.example.test", Scope: AllowAlways},
		"box/web/denied/cdn.example.test:443/allow-session": {Kind: ActAllow, Box: "web", Host: "cdn.example.test", Scope: AllowSession},
		"box/web/denied/cdn.example.test:443/allow-once":    {Kind: ActAllow, Box: "web", Host: "cdn.example.test", Scope: AllowOnce},
		"box/web/denied/cdn.example.test:443/allow-hour":    {Kind: ActAllow, Box: "web", Host: "cdn.example.test", Scope: AllowHour},
		"box/web/denied/cdn.example.test:443/allow-domain":  {Kind: ActAllow, Box: "web", Host: "example.test", Scope: AllowDomain},
		"stop-idle": {Kind: ActStopIdle},
		"quit":      {Kind: ActQuit},
	} {
		it, ok := m.Find(key)
		if !ok {
			t.Errorf("no item %q in\n%s", key, m.Text())
			continue
		}
		if it.Action != want {
			t.Errorf("%s: action %+v, want %+v", key, it.Action, want)
		}
	}
}

func TestParentDomain(t *testing.T) {
	for host, want := range map[string]string{
		"api.example.test":       "example.test",
		"example.test":           "example.test",
		"a.b.example.co.uk":      "example.co.uk",
		"Registry.Example.Test.": "example.test",
		"10.0.0.1":               "",
		"::1":                    "",
		"localhost":              "",
		"":                       "",
	} {
		if got := ParentDomain(host); got != want {
			t.Errorf("ParentDomain(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 512 << 20: "512 MiB", 1288490189: "1.2 GiB", 4 * gib: "4 GiB", 150 * gib: "150 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 12 * time.Minute: "12m", 3*time.Hour + 20*time.Minute: "3h20m", 11 * time.Hour: "11h", 50 * time.Hour: "2d"} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for in, want := range map[string]string{"short": "short", "exactly-ten": "exactly-t…", "ünïcödé-long-name": "ünïcödé-l…"} {
		if got := Truncate(in, 10); got != want {
			t.Errorf("Truncate(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRequestsItem(t *testing.T) {
	tests := []struct {
		name  string
		box   BoxView
		title string // "" = hidden
	}{
		{"none", BoxView{Name: "web-3f2a1c", State: boxstate.Running}, ""},
		{"one", BoxView{Name: "web-3f2a1c", State: boxstate.Stopped, Requests: 1}, "web-3f2a1c asks for 1 host — Review"},
		{"three", BoxView{Name: "web-3f2a1c", State: boxstate.Running, Requests: 3}, "web-3f2a1c asks for 3 hosts — Review"},
		{"a hostile name is sanitised", BoxView{Name: "web\x1b[2J", State: boxstate.Running, Requests: 2}, `web\x1b[2J asks for 2 hosts — Review`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(State{Boxes: []BoxView{tt.box}}, UI{}, Limits{})
			it, ok := m.Find("box/" + tt.box.Name + "/requests")
			if !ok {
				t.Fatalf("no requests slot in\n%s", m.Text())
			}
			if tt.title == "" {
				if !it.Hidden {
					t.Errorf("shown: %+v", it)
				}
				return
			}
			if it.Hidden || it.Title != tt.title || it.Disabled {
				t.Errorf("item %+v, want %q", it, tt.title)
			}
			if it.Action != (Action{Kind: ActReviewRequests, Box: tt.box.Name}) {
				t.Errorf("action %+v", it.Action)
			}
		})
	}
}

// TestRefusedItem: refused requests are a verdict beside the pending ones,
// never offered for approval (issue 37).
func TestRefusedItem(t *testing.T) {
	m := Build(State{Boxes: []BoxView{{Name: "web-3f2a1c", State: boxstate.Running, Requests: 1, Refused: 2}}}, UI{}, Limits{})
	it, ok := m.Find("box/web-3f2a1c/refused")
	if !ok || it.Hidden || !it.Disabled || it.Title != "web-3f2a1c: 2 requests refused — never allowed" || it.Action != (Action{}) {
		t.Errorf("refused item %+v", it)
	}
	if req, _ := m.Find("box/web-3f2a1c/requests"); req.Title != "web-3f2a1c asks for 1 host — Review" {
		t.Errorf("requests item %+v", req)
	}
	m = Build(State{Boxes: []BoxView{{Name: "web-3f2a1c", State: boxstate.Running}}}, UI{}, Limits{})
	if it, ok := m.Find("box/web-3f2a1c/refused"); !ok || !it.Hidden {
		t.Errorf("no refusals: %+v", it)
	}
}

func TestLoginItem(t *testing.T) {
	for _, tc := range []struct {
		state   LoginState
		hidden  bool
		checked bool
		title   string
	}{
		{LoginUnsupported, true, false, "Open at login"},
		{LoginOff, false, false, "Open at login"},
		{LoginOn, false, true, "Open at login"},
		{LoginNeedsApproval, false, true, "Open at login (allow in System Settings › Login Items)"},
	} {
		var got *Item
		m := Build(State{}, UI{Login: tc.state}, Limits{})
		for _, s := range m.Sections {
			for i := range s.Items {
				if s.Items[i].Key == "open-at-login" {
					got = &s.Items[i]
				}
			}
		}
		if got == nil {
			t.Fatalf("%v: no open-at-login item", tc.state)
		}
		if got.Hidden != tc.hidden || got.Checked != tc.checked || got.Title != tc.title || got.Action.Kind != ActToggleLogin {
			t.Errorf("%v: %+v", tc.state, *got)
		}
	}
}

// TestDotEveryState: every state of core's machine has its marker, and the
// title names every state but Running (which shows memory instead).
func TestDotEveryState(t *testing.T) {
	want := map[boxstate.State]string{
		boxstate.Missing: "✕", boxstate.Provisioning: "◐", boxstate.Failed: "✕", boxstate.Stopped: "○",
		boxstate.Saved: "○", boxstate.Starting: "◐", boxstate.Stopping: "◐", boxstate.Running: "●", boxstate.Broken: "✕",
	}
	for _, st := range boxstate.All {
		if got := Dot(st); got != want[st] {
			t.Errorf("Dot(%s) = %q, want %q", st, got, want[st])
		}
		title := BoxTitle(BoxView{Name: "b", State: st}, 40)
		if st != boxstate.Running && !strings.Contains(title, strings.ToLower(string(st))) {
			t.Errorf("BoxTitle of a %s box = %q", st, title)
		}
	}
}

// TestPolicyDisablesPermanentAllow: under the organisation's max_approval
// the permanent scopes are shown disabled, saying why; the others stay.
func TestPolicyDisablesPermanentAllow(t *testing.T) {
	why := "the organisation's policy (/etc/corral/managed.toml) refuses it: approvals last at most 8h0m0s"
	m := Build(State{Boxes: []BoxView{{Name: "web", State: boxstate.Running, Project: "/p/web", NoPermanentAllow: why,
		Denied: []DeniedHost{{Host: "cdn.example.test", Port: 443, Count: 1, Last: now}}}}}, UI{}, Limits{})
	for _, k := range []string{"allow-always", "allow-domain"} {
		it, ok := m.Find("box/web/denied/cdn.example.test:443/" + k)
		if !ok || !it.Disabled || it.Action != (Action{}) || it.Tooltip != why {
			t.Errorf("%s: %+v", k, it)
		}
	}
	for _, k := range []string{"allow-once", "allow-hour", "allow-session"} {
		if it, _ := m.Find("box/web/denied/cdn.example.test:443/" + k); it.Disabled || it.Action.Kind != ActAllow {
			t.Errorf("%s: %+v", k, it)
		}
	}
}
