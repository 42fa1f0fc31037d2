package menu

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/display"
)

var (
	gpuWeb = BoxView{Name: "web-3f2a1c", Project: "/home/me/src/web", State: boxstate.Running, MemBytes: 2 * gib, MemCapBytes: 8 * gib,
		Sessions: 1, Denied: []DeniedHost{{Host: "api.example.test", Port: 443, Count: 2, Last: now.Add(-time.Minute)}}}
	gpuDb = BoxView{Name: "db-1", Project: "/home/me/src/db", State: boxstate.Stopped, DeniedUnknown: "corral egress exited 1"}
	local = BoxView{Name: "web-3f2a1c", Project: "/home/u/src/web", State: boxstate.Stopped, MemCapBytes: 2 * gib}
)

// The menu groups boxes by where they run: this machine's first, as
// before, then per remote host a header and its boxes; a host that cannot
// be read is one line saying so, a host not read yet says that.
func TestRemoteGrouping(t *testing.T) {
	st := State{
		Boxes: []BoxView{local},
		Remote: []RemoteHost{
			{Name: "slow", URL: "ssh://me@slow.test", Reading: true},
			{Name: "gpu", URL: "ssh://me@gpu.test", At: now.Add(-10 * time.Second), Boxes: []BoxView{gpuWeb, gpuDb}},
			{Name: "down", URL: "ssh://down.test:2222", At: now, Err: "cannot reach the host over ssh: \"ssh: connect to host down.test port 2222: Connection refused\""},
			{Name: "idle", URL: "ssh://idle.test", At: now},
		},
	}
	got := Build(st, UI{Now: now}, Limits{}).Text()
	want := `corral · 0 of 1 running · 0 B [disabled]
○ web-3f2a1c  stopped >
  Open Claude session
  Open shell
  Start
  Review last session
  Show egress log
  Reveal project
  Rebuild…
on down — unreachable: cannot reach the host over ssh: "ssh: connect to host down.… >
  ssh://down.test:2222 [disabled]
  unreachable: cannot reach the host over ssh: "ssh: connect to host d… [disabled]
on gpu · 1 of 2 running · 2 GiB >
  ssh://me@gpu.test [disabled]
  read 14:59 [disabled]
○ db-1  stopped >
  Open Claude session
  Start
  Denials unknown: corral egress exited 1 [disabled]
● web-3f2a1c  2 GiB / 8 GiB · 1 session · 1 denied >
  Open Claude session
  Stop
  Denied hosts (1) >
    api.example.test:443 · 2× · 14:59 >
      Allow once
      Allow for 1 hour
      Allow for this session
      Allow always
      Allow *.example.test
on idle — no boxes >
  ssh://idle.test [disabled]
  read 15:00 [disabled]
on slow — reading… >
  ssh://me@slow.test [disabled]
  reading over ssh… [disabled]
----
Projects >
  No projects yet (run corral in a project) [disabled]
  Open folder…
Stop idle boxes (0) [disabled]
Open config
----
Quit corral
`
	if got != want {
		t.Errorf("menu:\n%s\nwant:\n%s", got, want)
	}
	// No local boxes: the summary says so, not "no boxes yet".
	st.Boxes = nil
	if s := Build(st, UI{}, Limits{}).Sections[0].Items[0].Title; s != "corral · no boxes on this machine" {
		t.Errorf("summary %q", s)
	}
}

// Every action of a remote box carries its host, and is one of those the
// app runs there (corral --host): a local action never reaches a remote
// box. The same box name on this machine stays local.
func TestRemoteActions(t *testing.T) {
	st := State{Boxes: []BoxView{local}, Remote: []RemoteHost{{Name: "gpu", Boxes: []BoxView{gpuWeb, gpuDb}}}}
	m := Build(st, UI{Now: now}, Limits{})
	kinds := map[ActionKind]bool{}
	for _, s := range m.Sections {
		var rec func([]Item)
		rec = func(items []Item) {
			for _, it := range items {
				a := it.Action
				if s.Key == SectionRemote && a.Kind != ActNone {
					if a.Remote != "gpu" || !slices.Contains([]ActionKind{ActStart, ActStop, ActAllow, ActOpenSession}, a.Kind) {
						t.Errorf("%s: remote action %+v", it.Key, a)
					}
					kinds[a.Kind] = true
				}
				if s.Key != SectionRemote && a.Remote != "" {
					t.Errorf("%s: local item with a remote action %+v", it.Key, a)
				}
				rec(it.Children)
			}
		}
		rec(s.Items)
	}
	if len(kinds) != 4 {
		t.Errorf("remote action kinds %v, want all four", kinds)
	}
	sess, _ := m.Find("remote/gpu/box/web-3f2a1c/session")
	if sess.Action != (Action{Kind: ActOpenSession, Box: "web-3f2a1c", Project: "/home/me/src/web", Remote: "gpu"}) {
		t.Errorf("session %+v", sess.Action)
	}
	allow, _ := m.Find("remote/gpu/box/web-3f2a1c/denied/api.example.test:443/allow-session")
	if allow.Action != (Action{Kind: ActAllow, Box: "web-3f2a1c", Host: "api.example.test", Scope: AllowSession, Remote: "gpu"}) {
		t.Errorf("allow %+v", allow.Action)
	}
	// Busy is per host and box: the local web-3f2a1c starting leaves the
	// remote one's Stop alone, and the other way round.
	m = Build(st, UI{Now: now, Busy: map[string]string{BusyKey("", "web-3f2a1c"): "Starting"}}, Limits{})
	if _, ok := m.Find("remote/gpu/box/web-3f2a1c/stop"); !ok {
		t.Error("remote box busy with the local one")
	}
	m = Build(st, UI{Now: now, Busy: map[string]string{BusyKey("gpu", "web-3f2a1c"): "Stopping"}}, Limits{})
	if it, ok := m.Find("remote/gpu/box/web-3f2a1c/busy"); !ok || it.Title != "Stopping…" {
		t.Errorf("remote busy: %+v", it)
	}
	if _, ok := m.Find("box/web-3f2a1c/start"); !ok {
		t.Error("local box busy with the remote one")
	}
	// A remote box without a project path has no session to open.
	noProj := gpuDb
	noProj.Project = ""
	m = Build(State{Remote: []RemoteHost{{Name: "gpu", Boxes: []BoxView{noProj}}}}, UI{}, Limits{})
	if it, _ := m.Find("remote/gpu/box/db-1/session"); !it.Disabled {
		t.Errorf("session without a project: %+v", it)
	}
}

// When hosts and boxes do not fit the section, every host keeps its
// header, box slots are shared host by host, and a cut host says how many
// more; the section never exceeds its slots.
func TestRemoteOverflow(t *testing.T) {
	many := func(n int) []BoxView {
		var bs []BoxView
		for i := range n {
			bs = append(bs, BoxView{Name: string(rune('a'+i)) + "-1", State: boxstate.Stopped})
		}
		return bs
	}
	st := State{Remote: []RemoteHost{{Name: "a", Boxes: many(10)}, {Name: "b", Boxes: many(1)}, {Name: "c", Boxes: many(3)}}}
	m := Build(st, UI{}, Limits{MaxRemote: 8})
	sec := m.Sections[2]
	if sec.Key != SectionRemote || sec.Cap != 8 || len(sec.Items) != 8 {
		t.Fatalf("section %s cap %d items %d", sec.Key, sec.Cap, len(sec.Items))
	}
	var titles []string
	for _, it := range sec.Items {
		titles = append(titles, strings.SplitN(it.Title, "  ", 2)[0])
	}
	got := strings.Join(titles, "|")
	if got != "on a · 0 of 10 running · 0 B · 8 more|○ a-1|○ b-1|on b · 0 of 1 running · 0 B|○ a-1|on c · 0 of 3 running · 0 B · 1 more|○ a-1|○ b-1" {
		t.Errorf("items %s", got)
	}
	// More hosts than slots: the last slot counts the rest.
	m = Build(st, UI{}, Limits{MaxRemote: 2})
	if items := m.Sections[2].Items; len(items) != 2 || items[1].Title != "+ 2 more hosts (corral host ls)" {
		t.Errorf("items %+v", items)
	}
	// The hosts file does not load: one line says so.
	m = Build(State{RemoteErr: "hosts.toml: unknown key \"x\""}, UI{}, Limits{})
	if items := m.Sections[2].Items; len(items) != 1 || !strings.HasPrefix(items[0].Title, "⚠ remote hosts: hosts.toml") {
		t.Errorf("items %+v", items)
	}
	// Every item of the section has a submenu whose first two children
	// are plain lines (the tray reuses slots by position).
	m = Build(State{RemoteErr: "x", Remote: append(st.Remote, RemoteHost{Name: "d", Err: "gone"})}, UI{}, Limits{})
	for _, it := range m.Sections[2].Items {
		if len(it.Children) < 2 || len(it.Children[0].Children)+len(it.Children[1].Children) != 0 {
			t.Errorf("%s: children %+v", it.Key, it.Children)
		}
	}
}

// A hostile host: everything it said goes through core/display; a denied
// host that is not canonical gets no Allow.
func TestRemoteHostile(t *testing.T) {
	st := State{Remote: []RemoteHost{
		{Name: "gpu", URL: "ssh://gpu.test", Boxes: []BoxView{{
			Name: "web-1", Project: "/src/\u202eevil", State: boxstate.Running, Err: "boom\x1b[2J", DeniedUnknown: "bad\x07",
			Denied: []DeniedHost{{Host: "\x1b[31mred", Count: 1, Last: now, Malformed: true}, {Host: "evil\u202ecom", Port: 443, Count: 1, Last: now}},
		}}},
		{Name: "down", Err: "host said \x1b]0;title\x07 \u202e"},
	}}
	m := Build(st, UI{Now: now}, Limits{})
	walk(m, func(it Item) {
		if strings.ContainsFunc(it.Title+it.Tooltip, display.Unsafe) {
			t.Errorf("%s: unsafe text %q / %q", it.Key, it.Title, it.Tooltip)
		}
		if it.Action.Kind == ActAllow {
			t.Errorf("%s: Allow offered for %q", it.Key, it.Action.Host)
		}
	})
}
