package menu

import (
	"fmt"
	"sort"
	"time"

	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/display"
)

// remoteItems are the remote hosts and their boxes, in the section's
// MaxRemote slots: per host (by name) a header, "on gpu · 2 of 3 running",
// then its boxes (by name). When they do not fit, every host keeps its
// header and the box slots are shared out one box at a time, host by
// host; a host whose boxes were cut says how many more on its header. A
// host that could not be read is its header alone, saying so.
//
// Every item of the section has a submenu whose first children are plain
// items at the same positions (a header's lines; a box's error, session
// and start/stop lines): the tray reuses top-level slots by position, so
// a slot that held a header and then holds a box, or back, keeps the same
// kind of child at each position.
func remoteItems(st State, ui UI, lim Limits) []Item {
	slots := lim.MaxRemote
	var out []Item
	if st.RemoteErr != "" {
		out = append(out, Item{Key: "remote/error", Title: "⚠ remote hosts: " + Truncate(st.RemoteErr, 60), Tooltip: st.RemoteErr,
			Children: []Item{
				{Key: "remote/error/why", Title: Truncate(st.RemoteErr, 2*lim.MaxTitle), Tooltip: st.RemoteErr, Disabled: true},
				{Key: "remote/error/fix", Title: "Fix ~/.corral/hosts.toml (corral host ls)", Disabled: true},
			}})
		slots--
	}
	hosts := append([]RemoteHost(nil), st.Remote...)
	sort.SliceStable(hosts, func(i, j int) bool { return hosts[i].Name < hosts[j].Name })
	if slots <= 0 || len(hosts) == 0 {
		return out
	}
	if len(hosts) > slots {
		// Not even the headers fit: the last slot says how many are left.
		for _, h := range hosts[:slots-1] {
			out = append(out, hostItem(h, len(h.Boxes), ui.Now, lim))
		}
		n := len(hosts) - (slots - 1)
		return append(out, Item{Key: "remote/more", Title: fmt.Sprintf("+ %d more host%s (corral host ls)", n, plural(n)),
			Children: []Item{{Key: "remote/more/how", Title: "corral --host NAME ls lists a host's boxes", Disabled: true}}})
	}
	shown := make([]int, len(hosts))
	for budget := slots - len(hosts); budget > 0; {
		progress := false
		for i, h := range hosts {
			if budget > 0 && shown[i] < len(h.Boxes) {
				shown[i]++
				budget--
				progress = true
			}
		}
		if !progress {
			break
		}
	}
	for i, h := range hosts {
		boxes := append([]BoxView(nil), h.Boxes...)
		sort.SliceStable(boxes, func(a, b int) bool { return boxes[a].Name < boxes[b].Name })
		out = append(out, hostItem(h, len(boxes)-shown[i], ui.Now, lim))
		for _, b := range boxes[:shown[i]] {
			b.Host = h.Name // whatever the view said: the box is where it was read
			out = append(out, remoteBoxItem(b, ui, lim))
		}
	}
	return out
}

// hostItem is a remote host's header: "on gpu · 2 of 3 running · 5 GiB",
// "on gpu — unreachable: REASON", "on gpu — reading…" or "on gpu — no
// boxes", with the URL and when it was read in its submenu.
func hostItem(h RemoteHost, more int, now time.Time, lim Limits) Item {
	k := "remote/" + h.Name
	title := "on " + Truncate(h.Name, lim.MaxTitle)
	status := "read " + FormatWhen(h.At, now)
	tip := "Boxes on " + h.Name + " (" + h.URL + "), read over ssh from its own corral"
	switch {
	case h.Err != "":
		title += " — unreachable: " + Truncate(h.Err, 60)
		status = "unreachable: " + Truncate(h.Err, 2*lim.MaxTitle)
		tip = h.Name + " (" + h.URL + ") cannot be read: " + h.Err
	case h.Reading:
		title += " — reading…"
		status = "reading over ssh…"
	case len(h.Boxes) == 0:
		title += " — no boxes"
	default:
		var running int
		var mem uint64
		for _, b := range h.Boxes {
			if b.Running() {
				running++
				mem += b.MemBytes
			}
		}
		title += fmt.Sprintf(" · %d of %d running · %s", running, len(h.Boxes), FormatBytes(mem))
	}
	if more > 0 && h.Err == "" {
		title += fmt.Sprintf(" · %d more", more)
		status += fmt.Sprintf(" · %d more: corral --host %s ls", more, h.Name)
	}
	return Item{Key: k, Title: title, Tooltip: tip, Children: []Item{
		{Key: k + "/url", Title: display.Text(h.URL, 2*lim.MaxTitle), Disabled: true},
		{Key: k + "/status", Title: status, Tooltip: tip, Disabled: true},
	}}
}

// remoteBoxItem is a box on a remote host: its title as a local box's,
// and the actions that run there (corral --host): open a Claude session,
// start or stop, allow a denied host. Nothing that needs this machine's
// files (its egress log, its project folder, a rebuild, a pull, ports on
// this machine's localhost) is offered.
func remoteBoxItem(b BoxView, ui UI, lim Limits) Item {
	k := "remote/" + b.Host + "/box/" + b.Name
	busyKey := BusyKey(b.Host, b.Name)
	tip := b.Name + " on " + b.Host
	if b.Project != "" {
		tip += " — " + b.Project
	}
	errItem := Item{Key: k + "/error", Disabled: true, Hidden: true}
	if b.Err != "" {
		errItem.Hidden = false
		errItem.Title = "⚠ " + Truncate(b.Err, 70)
		errItem.Tooltip = b.Err
	}
	session := Item{Key: k + "/session", Title: "Open Claude session", Tooltip: "corral --host " + b.Host + " claude in a terminal, in the project on " + b.Host,
		Disabled: b.State == boxstate.Broken || b.Project == "",
		Action:   Action{Kind: ActOpenSession, Box: b.Name, Project: b.Project, Remote: b.Host}}
	startStop := Item{Key: k + "/start", Title: "Start", Action: Action{Kind: ActStart, Box: b.Name, Remote: b.Host}}
	if b.Running() {
		startStop = Item{Key: k + "/stop", Title: "Stop", Action: Action{Kind: ActStop, Box: b.Name, Remote: b.Host}}
	}
	if verb, ok := ui.Busy[busyKey]; ok {
		startStop = Item{Key: k + "/busy", Title: verb + "…", Disabled: true}
	} else if b.State.Busy() {
		startStop = Item{Key: k + "/busy", Title: string(b.State) + "…", Disabled: true}
	}
	unknown := Item{Key: k + "/denied-unknown", Disabled: true, Hidden: b.DeniedUnknown == ""}
	if b.DeniedUnknown != "" {
		unknown.Title = "Denials unknown: " + Truncate(b.DeniedUnknown, 60)
		unknown.Tooltip = b.DeniedUnknown
	}
	return Item{Key: k, Title: BoxTitle(b, lim.MaxTitle), Tooltip: tip, Children: []Item{
		errItem,
		session,
		startStop,
		deniedItem(k, b, ui.Now, lim),
		unknown,
	}}
}
