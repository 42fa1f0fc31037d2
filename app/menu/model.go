package menu

import (
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
)

// ActionKind is what a click on an item does.
type ActionKind int

const (
	ActNone           ActionKind = iota // not clickable (labels)
	ActOpenSession                      // open a Claude session in Box
	ActOpenShell                        // open a shell in Box
	ActStart                            // start Box
	ActStop                             // stop Box
	ActAllow                            // allow Host for Box with Scope
	ActShowLog                          // open Box's egress log
	ActRevealProject                    // show Project in the file manager
	ActArmRebuild                       // first click on "Rebuild…": ask to confirm
	ActRebuild                          // confirmed rebuild of Box
	ActOpenProject                      // open a Claude session for Project, creating its box if needed
	ActStopIdle                         // stop all idle boxes
	ActOpenConfig                       // open the config file
	ActDismissError                     // clear the error line
	ActQuit                             // quit the app
	ActPull                             // fetch Box's new commits into the host repository (corral pull)
	ActReviewRequests                   // review the hosts Box's repository requests (corral approve in a terminal)
	ActAttach                           // open a terminal on Box's detachable session Session (corral attach)
	ActOpenFolder                       // choose a folder, then open a Claude session in it
	ActOpenPort                         // open http://localhost:Port/ in the browser (a port Box forwards)
	ActToggleLogin                      // turn "Open at login" on or off (macOS login item)
	ActDenyRequest                      // answer no to Box's request for Host (an entry or "port N")
	ActReviewSession                    // show what Box's last session did (corral review BOX --open)
)

// LoginState is the app's login item as the menu shows it.
type LoginState int

const (
	LoginUnsupported   LoginState = iota // no login item here (Linux: XDG autostart; a bare binary on macOS): no menu entry
	LoginOff                             // not registered
	LoginOn                              // registered and enabled
	LoginNeedsApproval                   // registered, waiting for the user in System Settings › General › Login Items
)

// Action is the effect of clicking an item. Only the fields the kind needs
// are set.
type Action struct {
	Kind    ActionKind
	Box     string
	Host    string // for ActAllow: the host, or the domain when Scope is AllowDomain
	Scope   AllowScope
	Project string // project directory
	Session string // for ActAttach: the detachable session's name
	Port    int    // for ActOpenPort: the host port on 127.0.0.1
	// Remote is the remote host Box runs on; "" for this machine. Only
	// ActStart, ActStop, ActAllow and ActOpenSession carry it: the app
	// runs them there (corral --host), and refuses any other action on a
	// remote box.
	Remote string
}

// Item is one menu entry. Key is stable across rebuilds for the same
// logical entry (e.g. "box/web/stop"), so tests and the tray can refer to
// it. Hidden items exist so that an entry keeps its position (and its
// submenu-ness) whether or not it is shown: systray can append items but
// cannot insert or safely remove them, so the tray reuses slots by position.
type Item struct {
	Key      string
	Title    string
	Tooltip  string
	Disabled bool
	Hidden   bool
	Checked  bool // shows a check mark
	Action   Action
	Children []Item
}

// Section is a run of top-level items. Cap is the number of slots the tray reserves for the section
// the first time it builds the menu: Build never returns more items than
// Cap, and the tray never grows a top-level section (items below a section
// could not be moved down).
type Section struct {
	Key string
	Cap int
	// SeparatorBefore draws a separator above the section. It is fixed per
	// section (systray separators cannot be hidden), so sections that may
	// be empty (the boxes) have none.
	SeparatorBefore bool
	Items           []Item
}

// Menu is the whole top-level menu.
type Menu struct {
	Sections []Section
}

// UI is app-side state that is not part of the box snapshot.
type UI struct {
	// SnapshotErr is the error of the last Snapshot; the menu then shows the
	// last good State with a warning header.
	SnapshotErr string
	// LastError is the last failed user action, shown until dismissed.
	LastError string
	// ConfirmRebuild is the box whose "Rebuild…" was clicked once; its item
	// then asks for a second click.
	ConfirmRebuild string
	// Busy maps box name to a verb ("Starting", "Stopping", "Rebuilding")
	// while an action on it runs; the start/stop item is then disabled.
	Busy map[string]string
	// Now is the reference time for "last denied" labels.
	Now time.Time
	// Login is the app's login item ("Open at login").
	Login LoginState
}

// loginItem is the "Open at login" toggle: hidden where there is no login
// item; while macOS waits for approval it is checked and says where.
func loginItem(s LoginState) Item {
	it := Item{Key: "open-at-login", Title: "Open at login", Action: Action{Kind: ActToggleLogin},
		Tooltip: "Start corral when you log in, so idle boxes are stopped and denials are notified"}
	switch s {
	case LoginUnsupported:
		it.Hidden = true
	case LoginOn:
		it.Checked = true
	case LoginNeedsApproval:
		it.Checked = true
		it.Title = "Open at login (allow in System Settings › Login Items)"
	}
	return it
}

// Limits for Build; the zero value means the defaults.
type Limits struct {
	MaxBoxes    int // top-level box slots, default 24
	MaxDenied   int // denied hosts listed per box, default 10
	MaxProjects int // projects listed, default 10
	MaxTitle    int // runes of a box or host name before "…", default 28
	MaxSessions int // detachable sessions listed per box, default 5
	MaxPorts    int // forwarded ports listed per box, default 3
	MaxRepos    int // repositories under project_roots listed, default 15
	MaxRemote   int // top-level slots of remote hosts and their boxes, default 24
}

func (l Limits) withDefaults() Limits {
	if l.MaxBoxes <= 0 {
		l.MaxBoxes = 24
	}
	if l.MaxDenied <= 0 {
		l.MaxDenied = 10
	}
	if l.MaxProjects <= 0 {
		l.MaxProjects = 10
	}
	if l.MaxTitle <= 0 {
		l.MaxTitle = 28
	}
	if l.MaxSessions <= 0 {
		l.MaxSessions = 5
	}
	if l.MaxPorts <= 0 {
		l.MaxPorts = 3
	}
	if l.MaxRepos <= 0 {
		l.MaxRepos = 15
	}
	if l.MaxRemote <= 0 {
		l.MaxRemote = 24
	}
	return l
}

// Section keys.
const (
	SectionHeader  = "header"
	SectionBoxes   = "boxes"
	SectionRemote  = "remote"
	SectionActions = "actions"
	SectionQuit    = "quit"
)

// Build derives the menu from state. It is pure and deterministic: the same
// inputs give the same Menu.
func Build(st State, ui UI, lim Limits) Menu {
	lim = lim.withDefaults()
	boxes := append([]BoxView(nil), st.Boxes...)
	sort.SliceStable(boxes, func(i, j int) bool { return boxes[i].Name < boxes[j].Name })

	var running int
	var mem uint64
	idle := 0
	for _, b := range boxes {
		if b.Running() {
			running++
			mem += b.MemBytes
		}
		if b.IdleCandidate() {
			idle++
		}
	}

	// Header: summary, overflow note, error line. Always three slots.
	var summary string
	switch {
	case len(boxes) == 0 && (len(st.Remote) > 0 || st.RemoteErr != ""):
		summary = "corral · no boxes on this machine"
	case len(boxes) == 0:
		summary = "corral · no boxes yet"
	default:
		summary = fmt.Sprintf("corral · %d of %d running · %s", running, len(boxes), FormatBytes(mem))
	}
	if ui.SnapshotErr != "" {
		summary = "⚠ cannot read box state: " + Truncate(ui.SnapshotErr, 60)
	}
	shown := boxes
	overflow := Item{Key: "header/overflow", Disabled: true, Hidden: true}
	if len(boxes) > lim.MaxBoxes {
		shown = boxes[:lim.MaxBoxes]
		overflow.Hidden = false
		overflow.Title = fmt.Sprintf("+ %d more (corral list)", len(boxes)-lim.MaxBoxes)
	}
	errItem := Item{Key: "header/error", Hidden: true}
	if ui.LastError != "" {
		errItem = Item{Key: "header/error", Title: "⚠ " + Truncate(ui.LastError, 70) + " (click to dismiss)",
			Tooltip: ui.LastError, Action: Action{Kind: ActDismissError}}
	}
	header := Section{Key: SectionHeader, Cap: 3, Items: []Item{
		{Key: "header/summary", Title: summary, Tooltip: ui.SnapshotErr, Disabled: true},
		overflow,
		errItem,
	}}

	boxItems := make([]Item, 0, len(shown))
	for _, b := range shown {
		boxItems = append(boxItems, boxItem(b, ui, lim))
	}

	stopIdle := Item{Key: "stop-idle", Title: fmt.Sprintf("Stop idle boxes (%d)", idle),
		Tooltip: "Stop running boxes with no session and no activity for longer than their idle_stop", Action: Action{Kind: ActStopIdle}}
	if idle == 0 {
		stopIdle.Disabled = true
	}
	actions := Section{Key: SectionActions, Cap: 4, SeparatorBefore: true, Items: []Item{
		projectsItem(st, lim),
		stopIdle,
		{Key: "open-config", Title: "Open config", Action: Action{Kind: ActOpenConfig}},
		loginItem(ui.Login),
	}}
	quit := Section{Key: SectionQuit, Cap: 1, SeparatorBefore: true, Items: []Item{
		{Key: "quit", Title: "Quit corral", Action: Action{Kind: ActQuit}},
	}}

	m := Menu{Sections: []Section{
		header,
		{Key: SectionBoxes, Cap: lim.MaxBoxes, Items: boxItems},
		{Key: SectionRemote, Cap: lim.MaxRemote, Items: remoteItems(st, ui, lim)},
		actions,
		quit,
	}}
	for i := range m.Sections {
		sanitize(m.Sections[i].Items)
	}
	return m
}

// maxTooltip caps a tooltip, in runes.
const maxTooltip = 512

// sanitize passes every title and tooltip through core/display once more,
// whatever built it: names, errors, hosts and paths can come from a
// repository or a box, and no control or bidi rune may reach the menu.
// display.Text is idempotent, so text already sanitised is unchanged.
func sanitize(items []Item) {
	for i := range items {
		items[i].Title = display.Text(items[i].Title, maxTooltip)
		items[i].Tooltip = display.Text(items[i].Tooltip, maxTooltip)
		sanitize(items[i].Children)
	}
}

// Dot is the state marker shown before a box name.
func Dot(state boxstate.State) string {
	switch {
	case state == boxstate.Running:
		return "●"
	case state == boxstate.Stopped || state == boxstate.Saved:
		return "○"
	case state.Busy():
		return "◐"
	default: // Failed, Broken, Missing, and anything unknown
		return "✕"
	}
}

// BoxTitle is the one-line label of a box, e.g.
// "● web-3f2a1c  1.2 GiB / 4 GiB · idle 12m · 2 denied".
func BoxTitle(b BoxView, maxName int) string {
	var s strings.Builder
	s.WriteString(Dot(b.State))
	s.WriteString(" ")
	s.WriteString(Truncate(b.Name, maxName))
	switch {
	case b.State == boxstate.Running && b.MemCapBytes > 0:
		fmt.Fprintf(&s, "  %s / %s", FormatBytes(b.MemBytes), FormatBytes(b.MemCapBytes))
	case b.State == boxstate.Running:
		fmt.Fprintf(&s, "  %s", FormatBytes(b.MemBytes))
	default:
		s.WriteString("  " + strings.ToLower(string(b.State)))
		if b.State == boxstate.Saved && b.SavedLowMemory {
			s.WriteString(" for low memory")
		}
	}
	if b.Running() {
		switch {
		case b.Sessions > 0:
			fmt.Fprintf(&s, " · %d session%s", b.Sessions, plural(b.Sessions))
		case b.Idle > 0:
			fmt.Fprintf(&s, " · idle %s", FormatDuration(b.Idle))
		}
	}
	if !b.LearningUntil.IsZero() {
		s.WriteString(" · learning")
	}
	if n := len(b.Asked); n > 0 {
		fmt.Fprintf(&s, " · %d asked", n)
	}
	if n := len(b.Denied); n > 0 {
		fmt.Fprintf(&s, " · %d denied", n)
	}
	if b.Err != "" {
		s.WriteString(" · ⚠")
	}
	return s.String()
}

func boxItem(b BoxView, ui UI, lim Limits) Item {
	k := "box/" + b.Name
	tip := b.Name
	if b.Project != "" {
		tip += " — " + b.Project
	}
	if b.PeakBytes > 0 {
		tip += " · peak " + FormatBytes(b.PeakBytes)
	}
	if b.IdleStop > 0 {
		tip += " · auto-stop after " + FormatDuration(b.IdleStop) + " idle"
	}
	if b.State == boxstate.Saved && b.SavedLowMemory {
		tip += " · saved at " + b.SavedAt.Local().Format("15:04") + " because the host ran short of memory (save_when_free_below); Start resumes it"
	}
	if !b.LearningUntil.IsZero() {
		tip += " · learning until " + b.LearningUntil.Local().Format("15:04") + ": its broker allows public hosts off the allow-list (corral egress learn " + b.Name + ")"
	}
	broken := b.State == boxstate.Broken

	errItem := Item{Key: k + "/error", Disabled: true, Hidden: true}
	if b.Err != "" {
		errItem.Hidden = false
		errItem.Title = "⚠ " + Truncate(b.Err, 70)
		errItem.Tooltip = b.Err
	}

	startStop := Item{Key: k + "/start", Title: "Start", Action: Action{Kind: ActStart, Box: b.Name}}
	if b.Running() {
		startStop = Item{Key: k + "/stop", Title: "Stop", Action: Action{Kind: ActStop, Box: b.Name}}
	}
	if verb, ok := ui.Busy[b.Name]; ok {
		startStop = Item{Key: k + "/busy", Title: verb + "…", Disabled: true}
	} else if b.State == boxstate.Starting || b.State == boxstate.Stopping {
		startStop = Item{Key: k + "/busy", Title: string(b.State) + "…", Disabled: true}
	}

	rebuild := Item{Key: k + "/rebuild", Title: "Rebuild…", Tooltip: "Delete and recreate the VM (asks for a second click)",
		Action: Action{Kind: ActArmRebuild, Box: b.Name}}
	if ui.ConfirmRebuild == b.Name {
		rebuild = Item{Key: k + "/rebuild-confirm", Title: "Click again to rebuild " + Truncate(b.Name, lim.MaxTitle),
			Tooltip: "The VM is deleted and recreated; files outside the project mount are lost",
			Action:  Action{Kind: ActRebuild, Box: b.Name}}
	}
	if _, busy := ui.Busy[b.Name]; busy {
		rebuild.Disabled = true
	}

	reveal := Item{Key: k + "/reveal", Title: "Reveal project", Action: Action{Kind: ActRevealProject, Box: b.Name, Project: b.Project}}
	if b.Project == "" {
		reveal.Disabled = true
		reveal.Action = Action{}
	}

	noProject := b.Project == ""
	children := []Item{
		errItem,
		{Key: k + "/session", Title: "Open Claude session", Disabled: broken || noProject, Action: Action{Kind: ActOpenSession, Box: b.Name, Project: b.Project}},
		{Key: k + "/shell", Title: "Open shell", Disabled: broken || noProject, Action: Action{Kind: ActOpenShell, Box: b.Name, Project: b.Project}},
	}
	children = append(children, sessionItems(k, b, ui.Now, lim)...)
	children = append(children, portItems(k, b, lim)...)
	children = append(children, hostPortsItem(k, b, lim))
	return Item{
		Key:     k,
		Title:   BoxTitle(b, lim.MaxTitle),
		Tooltip: tip,
		Children: append(children,
			startStop,
			pullItem(k, b, ui),
			requestsItem(k, b, lim),
			refusedItem(k, b, lim),
			askedItem(k, b, ui.Now, lim),
			deniedItem(k, b, ui.Now, lim),
			credentialsItem(k, b, ui.Now, lim),
			Item{Key: k + "/review", Title: "Review last session", Tooltip: "What the last session did: network, requests, grants, credentials, git, files",
				Action: Action{Kind: ActReviewSession, Box: b.Name}},
			Item{Key: k + "/log", Title: "Show egress log", Action: Action{Kind: ActShowLog, Box: b.Name}},
			reveal,
			rebuild,
		),
	}
}

// portItems are "Open localhost:3000" for the ports a running box
// forwards to the host's 127.0.0.1, in MaxPorts fixed slots (hidden when
// unused, so that the submenu keeps its shape); more ports than slots are
// in corral info.
func portItems(k string, b BoxView, lim Limits) []Item {
	out := make([]Item, 0, lim.MaxPorts)
	for i := range lim.MaxPorts {
		it := Item{Key: fmt.Sprintf("%s/port/%d", k, i), Hidden: true}
		if b.Running() && i < len(b.Ports) && b.Ports[i] > 0 && b.Ports[i] <= 65535 {
			p := b.Ports[i]
			it = Item{Key: it.Key, Title: fmt.Sprintf("Open localhost:%d", p),
				Tooltip: fmt.Sprintf("Open http://localhost:%d/ in the browser: the box's port forwarded to this host's 127.0.0.1", p),
				Action:  Action{Kind: ActOpenPort, Box: b.Name, Port: p}}
		}
		out = append(out, it)
	}
	return out
}

// hostPortsItem is the label "Host ports 9229, 63342 (IDE bridge)": the
// ports of this machine's loopback the box may reach (host_ports), as
// `corral info` shows them, with the route in the tooltip. Display only,
// not clickable; hidden when the box has none, so the submenu keeps its
// slots. Ports outside 1-65535 are not shown.
func hostPortsItem(k string, b BoxView, lim Limits) Item {
	it := Item{Key: k + "/host-ports", Disabled: true, Hidden: true}
	var ps []string
	for _, p := range b.HostPorts {
		if p > 0 && p <= 65535 {
			ps = append(ps, strconv.Itoa(p))
		}
	}
	if len(ps) == 0 {
		return it
	}
	it.Hidden = false
	it.Title = Truncate("Host ports "+strings.Join(ps, ", "), 2*lim.MaxTitle) + " (IDE bridge)"
	it.Tooltip = "The box may reach these ports of this machine (host_ports): " + strings.Join(ps, ", ")
	if b.HostPortsRoute != "" {
		it.Tooltip += "; " + b.HostPortsRoute
	}
	return it
}

// quietAfter: a session with input or output this recent is shown as
// active. The app asks the box every sessionsTTL (tens of seconds), so
// finer is not known.
const quietAfter = time.Minute

// sessionItems are the box's detachable sessions, each an "Attach" item,
// in MaxSessions+1 fixed slots (the last says how many more there are),
// hidden when unused, so that the submenu keeps its shape.
func sessionItems(k string, b BoxView, now time.Time, lim Limits) []Item {
	out := make([]Item, 0, lim.MaxSessions+1)
	ss := append([]SessionView(nil), b.Detached...)
	if !b.Running() {
		ss = nil
	}
	// Most recently active first; ties by name.
	sort.SliceStable(ss, func(i, j int) bool {
		if !ss[i].Activity.Equal(ss[j].Activity) {
			return ss[i].Activity.After(ss[j].Activity)
		}
		return ss[i].Name < ss[j].Name
	})
	for i := range lim.MaxSessions {
		if i >= len(ss) {
			out = append(out, Item{Key: fmt.Sprintf("%s/attach/%d", k, i), Hidden: true})
			continue
		}
		out = append(out, attachItem(k, b.Name, ss[i], now, lim))
	}
	more := Item{Key: k + "/attach/more", Disabled: true, Hidden: true}
	if n := len(ss) - lim.MaxSessions; n > 0 {
		more.Hidden = false
		more.Title = fmt.Sprintf("+ %d more session%s (corral sessions)", n, plural(n))
	}
	return append(out, more)
}

// attachItem is "Attach claude · quiet 12m" for one session.
func attachItem(k, box string, s SessionView, now time.Time, lim Limits) Item {
	name := display.Text(s.Name, lim.MaxTitle)
	title := "Attach " + name
	if s.Agent != "" && s.Agent != s.Name {
		title += " (" + display.Text(s.Agent, lim.MaxTitle) + ")"
	}
	tip := "Open a terminal on corral attach " + box + " " + name
	switch {
	case s.Activity.IsZero():
	case now.Sub(s.Activity) < quietAfter:
		title += " · active"
		tip += ". Input or output in the last minute"
	default:
		title += " · quiet " + FormatDuration(now.Sub(s.Activity))
		tip += ". No input or output for " + FormatDuration(now.Sub(s.Activity)) + ": it may be waiting for you, or working silently"
	}
	if s.Attached > 0 {
		title += fmt.Sprintf(" · %d attached", s.Attached)
	}
	return Item{Key: k + "/attach/" + s.Name, Title: title, Tooltip: tip,
		Action: Action{Kind: ActAttach, Box: box, Session: s.Name}}
}

// pullItem is "Pull N new commits" for a running box whose repository has
// commits the host has not pulled; hidden otherwise, so the submenu keeps
// its slots.
func pullItem(k string, b BoxView, ui UI) Item {
	it := Item{Key: k + "/pull", Hidden: true}
	if !b.Running() || b.NewCommits <= 0 {
		return it
	}
	it.Hidden = false
	it.Title = fmt.Sprintf("Pull %d new commits", b.NewCommits)
	if b.NewCommits == 1 {
		it.Title = "Pull 1 new commit"
	}
	it.Tooltip = "Fetch the box's branches into refs/remotes/corral/" + b.Name + "/ for review (corral pull)"
	it.Action = Action{Kind: ActPull, Box: b.Name}
	if _, busy := ui.Busy[b.Name]; busy {
		it.Disabled = true
	}
	return it
}

// requestsItem is "web-3f2a1c asks for 3 hosts — Review" when the box's
// repository requests hosts nobody approved yet (a request is never a
// permission); it opens `corral approve BOX` in a terminal, which shows
// each entry. Hidden otherwise, so the submenu keeps its slots.
func requestsItem(k string, b BoxView, lim Limits) Item {
	it := Item{Key: k + "/requests", Hidden: true}
	if b.Requests <= 0 {
		return it
	}
	hosts := "hosts"
	if b.Requests == 1 {
		hosts = "host"
	}
	it.Hidden = false
	it.Title = fmt.Sprintf("%s asks for %d %s — Review", Truncate(b.Name, lim.MaxTitle), b.Requests, hosts)
	it.Tooltip = "The repository's .corral.toml requests hosts; nothing is allowed until you approve (corral approve " + b.Name + ")"
	it.Action = Action{Kind: ActReviewRequests, Box: b.Name, Project: b.Project}
	return it
}

// refusedItem is "web-3f2a1c: 2 requests refused" when the box's
// repository requests entries the grant check refuses: a verdict shown as
// one, disabled (nothing to approve); corral config check says why.
// Hidden otherwise.
func refusedItem(k string, b BoxView, lim Limits) Item {
	it := Item{Key: k + "/refused", Hidden: b.Refused <= 0, Disabled: true}
	if it.Hidden {
		return it
	}
	what := "requests"
	if b.Refused == 1 {
		what = "request"
	}
	it.Title = fmt.Sprintf("%s: %d %s refused — never allowed", Truncate(b.Name, lim.MaxTitle), b.Refused, what)
	it.Tooltip = "The repository's .corral.toml requests entries the grant check refuses; the box runs without them (corral config check -C PROJECT says why)"
	return it
}

// credentialsItem lists the brokered credentials the box used, a line
// each: uses and last use. Display only: the broker decides, the audit
// log is the record.
func credentialsItem(k string, b BoxView, now time.Time, lim Limits) Item {
	it := Item{Key: k + "/credentials", Title: "Credentials used", Hidden: len(b.Credentials) == 0}
	if len(b.Credentials) == 0 {
		return it
	}
	cs := append([]CredentialUse(nil), b.Credentials...)
	sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	it.Title = fmt.Sprintf("Credentials used (%d)", len(cs))
	it.Tooltip = "Brokered credentials: the broker holds them; the box used them through it (corral egress " + b.Name + ")"
	for _, c := range cs {
		name := display.Text(c.Name, lim.MaxTitle)
		it.Children = append(it.Children, Item{Key: k + "/credentials/" + name, Disabled: true,
			Title: fmt.Sprintf("%s · %d use%s · last %s", name, c.Uses, plural(c.Uses), FormatWhen(c.Last, now))})
	}
	return it
}

func deniedItem(k string, b BoxView, now time.Time, lim Limits) Item {
	it := Item{Key: k + "/denied", Title: "Denied hosts", Hidden: len(b.Denied) == 0}
	if len(b.Denied) == 0 {
		return it
	}
	ds := append([]DeniedHost(nil), b.Denied...)
	// Most recent first; ties by host so the order is stable.
	sort.SliceStable(ds, func(i, j int) bool {
		if !ds[i].Last.Equal(ds[j].Last) {
			return ds[i].Last.After(ds[j].Last)
		}
		return hostPort(ds[i]) < hostPort(ds[j])
	})
	if len(ds) > lim.MaxDenied {
		it.Title = fmt.Sprintf("Denied hosts (%d, latest %d)", len(ds), lim.MaxDenied)
		ds = ds[:lim.MaxDenied]
	} else {
		it.Title = fmt.Sprintf("Denied hosts (%d)", len(ds))
	}
	for _, d := range ds {
		hk := k + "/denied/" + hostPort(d)
		title := fmt.Sprintf("%s · %d× · %s", egress.ShowTarget(hostPort(d), lim.MaxTitle+8), d.Count, FormatWhen(d.Last, now))
		if !Allowable(d) {
			// The request did not parse: show it, offer nothing.
			it.Children = append(it.Children, Item{
				Key: hk, Title: title, Tooltip: display.Text(hostPort(d), 0) + " (malformed request: nothing to allow)",
				Children: []Item{{Key: hk + "/malformed", Title: "Malformed request: cannot be allowed", Disabled: true}},
			})
			continue
		}
		domain := Item{Key: hk + "/allow-domain", Hidden: true}
		if dom := ParentDomain(d.Host); dom != "" {
			domain = Item{Key: hk + "/allow-domain", Title: "Allow *." + display.Host(dom, lim.MaxTitle),
				Tooltip: "Allow " + display.Host(dom, 0) + " and all its subdomains, permanently",
				Action:  Action{Kind: ActAllow, Box: b.Name, Host: dom, Scope: AllowDomain, Remote: b.Host}}
			if b.NoPermanentAllow != "" {
				domain = disabledByPolicy(domain, b.NoPermanentAllow)
			}
		}
		tip := egress.ShowTarget(hostPort(d), 0)
		if egress.ThisMachine(d.Host) {
			tip += " — " + egress.ThisMachineWhy
		}
		if d.Who != "" {
			tip += " — last from " + display.Text(d.Who, 0) + " (the box's word)"
		}
		it.Children = append(it.Children, Item{
			Key: hk, Title: title, Tooltip: tip,
			Children: append(allowItems(hk, b.Name, b.Host, egress.EntryFor(d.Host, d.Port), b.NoPermanentAllow), domain),
		})
	}
	return it
}

// askedItem is the box's inbox: the requests its programs filed with
// corral-request, newest first, each with its reason and process (the
// box's words) and the same Allow scopes as a denied host, and Deny.
func askedItem(k string, b BoxView, now time.Time, lim Limits) Item {
	it := Item{Key: k + "/asked", Title: "Requests from the box", Hidden: len(b.Asked) == 0}
	if len(b.Asked) == 0 {
		return it
	}
	rs := append([]BoxRequest(nil), b.Asked...)
	sort.SliceStable(rs, func(i, j int) bool {
		if !rs[i].Time.Equal(rs[j].Time) {
			return rs[i].Time.After(rs[j].Time)
		}
		return rs[i].Request < rs[j].Request
	})
	it.Title = fmt.Sprintf("Requests from the box (%d)", len(rs))
	if len(rs) > lim.MaxDenied {
		it.Title = fmt.Sprintf("Requests from the box (%d, latest %d)", len(rs), lim.MaxDenied)
		rs = rs[:lim.MaxDenied]
	}
	it.Tooltip = "Programs in the box asked for these (corral-request). The reason and the process are the box's own words; nothing is allowed until you answer."
	for _, r := range rs {
		target := display.Text(r.Request, lim.MaxTitle+8)
		local := !r.IsPort && egress.ThisMachine(egress.EntryHost(r.Request))
		if !r.IsPort {
			target = egress.ShowTarget(r.Request, lim.MaxTitle+8)
		}
		hk := k + "/asked/" + r.Request
		tip := "“" + display.Text(r.Why, 0) + "”"
		if r.Who != "" {
			tip += " — asked by " + display.Text(r.Who, 0)
		}
		if local {
			tip += " — " + egress.ThisMachineMark + ": " + egress.ThisMachineWhy
		}
		children := []Item{
			{Key: hk + "/why", Title: "“" + display.Text(r.Why, 2*lim.MaxTitle) + "”", Tooltip: tip, Disabled: true},
			{Key: hk + "/who", Title: "asked by " + display.Text(r.Who, 2*lim.MaxTitle), Disabled: true, Hidden: r.Who == ""},
			{Key: hk + "/this-machine", Title: "⚠ This machine: the box would reach your own local services", Tooltip: egress.ThisMachineWhy,
				Disabled: true, Hidden: !local},
		}
		switch {
		case r.IsPort:
			children = append(children, Item{Key: hk + "/port", Disabled: true,
				Title: "To forward it: corral port " + display.Text(b.Name, 0) + " " + strings.TrimPrefix(display.Text(r.Request, 0), "port ")})
		case RequestAllowable(r):
			children = append(children, allowItems(hk, b.Name, "", r.Request, b.NoPermanentAllow)...)
		default:
			children = append(children, Item{Key: hk + "/malformed", Title: "Not one host: cannot be allowed", Disabled: true})
		}
		children = append(children, Item{Key: hk + "/deny", Title: "Deny", Tooltip: "Answer no: a connection held for it is refused",
			Action: Action{Kind: ActDenyRequest, Box: b.Name, Host: r.Request}})
		it.Children = append(it.Children, Item{Key: hk, Title: target + " · " + FormatWhen(r.Time, now), Tooltip: tip, Children: children})
	}
	return it
}

// allowScopes are the scopes the menu offers for a denied host, shortest
// first, each with its title and what it means.
var allowScopes = []struct {
	key     string
	scope   AllowScope
	title   string
	tooltip string
}{
	{"allow-once", AllowOnce, "Allow once", "Allow the next connection only (a held connection proceeds)"},
	{"allow-hour", AllowHour, "Allow for 1 hour", "Allow for the next hour, then deny again"},
	{"allow-session", AllowSession, "Allow for this session", "Allow until the box stops (at most 12 hours)"},
	{"allow-always", AllowAlways, "Allow always", "Allow until revoked (corral allow --revoke)"},
}

// allowItems are the allow items of the denied host under key hk, for
// box on remote ("" for this machine).
// noPermanent, when set, disables the permanent scope, saying why.
func allowItems(hk, box, remote, host, noPermanent string) []Item {
	out := make([]Item, 0, len(allowScopes)+1)
	for _, s := range allowScopes {
		it := Item{Key: hk + "/" + s.key, Title: s.title, Tooltip: s.tooltip,
			Action: Action{Kind: ActAllow, Box: box, Host: host, Scope: s.scope, Remote: remote}}
		if s.scope == AllowAlways && noPermanent != "" {
			it = disabledByPolicy(it, noPermanent)
		}
		out = append(out, it)
	}
	return out
}

// disabledByPolicy is it, disabled with the organisation's reason.
func disabledByPolicy(it Item, why string) Item {
	it.Disabled, it.Action, it.Tooltip = true, Action{}, display.Text(why, 0)
	return it
}

func projectsItem(st State, lim Limits) Item {
	it := Item{Key: "projects", Title: "Projects"}
	ps := append([]Project(nil), st.Projects...)
	sort.SliceStable(ps, func(i, j int) bool {
		if !ps[i].LastUsed.Equal(ps[j].LastUsed) {
			return ps[i].LastUsed.After(ps[j].LastUsed)
		}
		return ps[i].Dir < ps[j].Dir
	})
	listed := map[string]bool{}
	for _, p := range ps {
		if len(it.Children) == lim.MaxProjects {
			break
		}
		if p.Dir == "" || listed[p.Dir] {
			continue
		}
		listed[p.Dir] = true
		it.Children = append(it.Children, projectItem("project/", p, lim))
	}
	if len(it.Children) == 0 && len(st.Repos) == 0 {
		it.Children = []Item{{Key: "projects/none", Title: "No projects yet (run corral in a project)", Disabled: true}}
	}
	var repos []Item
	for _, p := range st.Repos {
		if len(repos) == lim.MaxRepos {
			break
		}
		if p.Dir == "" || listed[p.Dir] {
			continue
		}
		listed[p.Dir] = true
		repos = append(repos, projectItem("repo/", p, lim))
	}
	label := Item{Key: "projects/roots", Disabled: true, Hidden: len(repos) == 0}
	if len(repos) > 0 {
		label.Title = "In " + Truncate(strings.Join(st.Roots, ", "), 2*lim.MaxTitle)
		if len(st.Roots) == 0 {
			label.Title = "In project_roots"
		}
	}
	it.Children = append(append(it.Children, label), repos...)
	it.Children = append(it.Children, Item{Key: "projects/open-folder", Title: "Open folder…",
		Tooltip: "Choose a project folder and open a Claude session in it (its box is created on first use)",
		Action:  Action{Kind: ActOpenFolder}})
	return it
}

// projectItem opens a Claude session in p's folder; "(new box)" when it
// has none yet.
func projectItem(prefix string, p Project, lim Limits) Item {
	name := p.Name
	if name == "" {
		name = filepath.Base(p.Dir)
	}
	title := Truncate(name, lim.MaxTitle)
	if p.Box == "" {
		title += " (new box)"
	}
	return Item{Key: prefix + p.Dir, Title: title, Tooltip: "Open a Claude session in " + p.Dir,
		Action: Action{Kind: ActOpenProject, Project: p.Dir, Box: p.Box}}
}

// Allowable reports whether a denied request may be offered for approval:
// it parsed (the broker logged no malformed-request reason) and its host is
// already the canonical form egress.ParseAuthority gives (so what the user
// approves is exactly what was denied, never raw request text).
func Allowable(d DeniedHost) bool {
	if d.Malformed || d.Port <= 0 || d.Host == "" {
		return false
	}
	a, err := egress.ParseAuthority(net.JoinHostPort(d.Host, strconv.Itoa(d.Port)), 0)
	return err == nil && a.Host == d.Host
}

// RequestAllowable reports whether a box's request may be offered for
// approval: it names one host in the canonical form of the one allow-list
// grammar (no wildcard, any port or range), so what the user allows is
// exactly what was asked for.
func RequestAllowable(r BoxRequest) bool {
	if r.IsPort {
		return false
	}
	e, err := egress.ParseAllowEntry(r.Request)
	return err == nil && e.OneHost() && e.String() == r.Request
}

func hostPort(d DeniedHost) string {
	if d.Port == 0 {
		return d.Host
	}
	return net.JoinHostPort(d.Host, fmt.Sprint(d.Port))
}

// ParentDomain returns the domain that "Allow *.domain" offers for host:
// the registrable domain (eTLD+1, e.g. "example.test" for
// "api.example.test", "example.co.uk" for "a.b.example.co.uk"). It returns
// "" for IP addresses and for names without a registrable domain.
func ParentDomain(host string) string { return egress.RegistrableDomain(host) }

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
