// Package desktoptest holds test-only helpers for the menu-bar app on
// Linux: a fake org.kde.StatusNotifierWatcher, a com.canonical.dbusmenu
// client (GetLayout, Event "clicked", LayoutUpdated), a fake
// org.freedesktop.Notifications daemon and Xvfb. The private session bus
// itself comes from core/desktoptest.
package desktoptest

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/godbus/dbus/v5/introspect"
	"github.com/godbus/dbus/v5/prop"
)

// ---- org.kde.StatusNotifierWatcher (test double) ----

// Watcher is a minimal org.kde.StatusNotifierWatcher. Items that call
// RegisterStatusNotifierItem show up on Registered as "busname/path".
type Watcher struct {
	conn       *dbus.Conn
	props      *prop.Properties
	mu         sync.Mutex
	items      []string
	Registered chan string
}

func (w *Watcher) RegisterStatusNotifierItem(sender dbus.Sender, service string) *dbus.Error {
	// KDE/Ayatana items pass a bus name, fyne/systray passes an object path.
	busName, path := string(sender), "/StatusNotifierItem"
	if strings.HasPrefix(service, "/") {
		path = service
	} else if service != "" {
		busName = service
	}
	id := busName + path
	w.mu.Lock()
	w.items = append(w.items, id)
	items := append([]string(nil), w.items...)
	w.mu.Unlock()
	w.props.SetMust("org.kde.StatusNotifierWatcher", "RegisteredStatusNotifierItems", items)
	_ = w.conn.Emit("/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher.StatusNotifierItemRegistered", id)
	select {
	case w.Registered <- id:
	default:
	}
	return nil
}

func (w *Watcher) RegisterStatusNotifierHost(service string) *dbus.Error { return nil }

const watcherIntro = `<interface name="org.kde.StatusNotifierWatcher">
 <method name="RegisterStatusNotifierItem"><arg name="service" type="s" direction="in"/></method>
 <method name="RegisterStatusNotifierHost"><arg name="service" type="s" direction="in"/></method>
 <property name="RegisteredStatusNotifierItems" type="as" access="read"/>
 <property name="IsStatusNotifierHostRegistered" type="b" access="read"/>
 <property name="ProtocolVersion" type="i" access="read"/>
 <signal name="StatusNotifierItemRegistered"><arg type="s"/></signal>
 <signal name="StatusNotifierItemUnregistered"><arg type="s"/></signal>
 <signal name="StatusNotifierHostRegistered"/>
</interface>`

// StartWatcher claims org.kde.StatusNotifierWatcher on conn.
func StartWatcher(conn *dbus.Conn) (*Watcher, error) {
	w := &Watcher{conn: conn, Registered: make(chan string, 16)}
	if err := conn.Export(w, "/StatusNotifierWatcher", "org.kde.StatusNotifierWatcher"); err != nil {
		return nil, err
	}
	p, err := prop.Export(conn, "/StatusNotifierWatcher", map[string]map[string]*prop.Prop{
		"org.kde.StatusNotifierWatcher": {
			"RegisteredStatusNotifierItems":  {Value: []string{}, Emit: prop.EmitTrue},
			"IsStatusNotifierHostRegistered": {Value: true, Emit: prop.EmitTrue},
			"ProtocolVersion":                {Value: int32(0), Emit: prop.EmitTrue},
		}})
	if err != nil {
		return nil, err
	}
	w.props = p
	_ = conn.Export(introspect.Introspectable(`<node>`+watcherIntro+`</node>`), "/StatusNotifierWatcher", "org.freedesktop.DBus.Introspectable")
	reply, err := conn.RequestName("org.kde.StatusNotifierWatcher", dbus.NameFlagDoNotQueue)
	if err != nil {
		return nil, err
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		return nil, fmt.Errorf("org.kde.StatusNotifierWatcher already owned (reply %d)", reply)
	}
	return w, nil
}

// ---- finding items ----

// FindItems lists bus names that look like StatusNotifierItems
// (org.kde.StatusNotifierItem-PID-N), which fyne/systray requests even
// when no watcher exists.
func FindItems(conn *dbus.Conn) ([]string, error) {
	var names []string
	if err := conn.BusObject().Call("org.freedesktop.DBus.ListNames", 0).Store(&names); err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, "org.kde.StatusNotifierItem-") {
			out = append(out, n)
		}
	}
	return out, nil
}

// Item is a remote StatusNotifierItem.
type Item struct {
	Conn    *dbus.Conn
	Dest    string // bus name (well-known or unique)
	Path    dbus.ObjectPath
	MenuObj dbus.ObjectPath
}

// OpenItem reads the item's Menu property.
func OpenItem(conn *dbus.Conn, dest string, path dbus.ObjectPath) (*Item, error) {
	v, err := conn.Object(dest, path).GetProperty("org.kde.StatusNotifierItem.Menu")
	if err != nil {
		return nil, fmt.Errorf("get Menu property: %w", err)
	}
	mp, ok := v.Value().(dbus.ObjectPath)
	if !ok {
		return nil, fmt.Errorf("Menu property has type %T", v.Value())
	}
	return &Item{Conn: conn, Dest: dest, Path: path, MenuObj: mp}, nil
}

// Prop reads one org.kde.StatusNotifierItem property.
func (it *Item) Prop(name string) (interface{}, error) {
	v, err := it.Conn.Object(it.Dest, it.Path).GetProperty("org.kde.StatusNotifierItem." + name)
	if err != nil {
		return nil, err
	}
	return v.Value(), nil
}

// ---- com.canonical.dbusmenu ----

// MenuNode is one entry of a dbusmenu layout.
type MenuNode struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []*MenuNode
}

func (n *MenuNode) Label() string { s, _ := n.Props["label"].Value().(string); return s }
func (n *MenuNode) Type() string  { s, _ := n.Props["type"].Value().(string); return s }
func (n *MenuNode) Enabled() bool {
	v, ok := n.Props["enabled"]
	if !ok {
		return true // dbusmenu default
	}
	b, _ := v.Value().(bool)
	return b
}
func (n *MenuNode) Visible() bool {
	v, ok := n.Props["visible"]
	if !ok {
		return true
	}
	b, _ := v.Value().(bool)
	return b
}

func (n *MenuNode) visibleChildren() int {
	k := 0
	for _, c := range n.Children {
		if c.Visible() {
			k++
		}
	}
	return k
}

// Find returns the first visible node (depth first) whose label is label.
func (n *MenuNode) Find(label string) *MenuNode {
	if !n.Visible() {
		return nil
	}
	if n.Label() == label {
		return n
	}
	for _, c := range n.Children {
		if f := c.Find(label); f != nil {
			return f
		}
	}
	return nil
}

// Dump renders the visible tree in the format of menu.Menu.Text: one item
// per line, "----" for separators, " [disabled]" and " >" suffixes.
func (n *MenuNode) Dump() string {
	var b strings.Builder
	var walk func(m *MenuNode, depth int)
	walk = func(m *MenuNode, depth int) {
		if depth > 0 && !m.Visible() {
			return // hidden items and their children are not shown
		}
		if depth > 0 {
			line := m.Label()
			if m.Type() == "separator" {
				line = "----"
			}
			if !m.Enabled() {
				line += " [disabled]"
			}
			if m.visibleChildren() > 0 {
				line += " >"
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth-1), line)
		}
		for _, c := range m.Children {
			walk(c, depth+1)
		}
	}
	walk(n, 0)
	return b.String()
}

type rawLayout struct {
	ID       int32
	Props    map[string]dbus.Variant
	Children []dbus.Variant
}

func convert(r rawLayout) (*MenuNode, error) {
	n := &MenuNode{ID: r.ID, Props: r.Props}
	for _, cv := range r.Children {
		var cr rawLayout
		if err := dbus.Store([]interface{}{cv.Value()}, &cr); err != nil {
			return nil, fmt.Errorf("child of %d: %w", r.ID, err)
		}
		c, err := convert(cr)
		if err != nil {
			return nil, err
		}
		n.Children = append(n.Children, c)
	}
	return n, nil
}

// Layout calls com.canonical.dbusmenu.GetLayout(0, -1, []) and returns the
// revision and the whole tree.
func (it *Item) Layout() (uint32, *MenuNode, error) {
	var rev uint32
	var raw rawLayout
	call := it.Conn.Object(it.Dest, it.MenuObj).Call("com.canonical.dbusmenu.GetLayout", 0, int32(0), int32(-1), []string{})
	if call.Err != nil {
		return 0, nil, call.Err
	}
	if err := call.Store(&rev, &raw); err != nil {
		return 0, nil, err
	}
	n, err := convert(raw)
	return rev, n, err
}

// Click sends com.canonical.dbusmenu.Event(id, "clicked", int32 0, 0), what a
// tray host sends when the user picks an item.
func (it *Item) Click(id int32) error {
	return it.Conn.Object(it.Dest, it.MenuObj).Call("com.canonical.dbusmenu.Event", 0,
		id, "clicked", dbus.MakeVariant(int32(0)), uint32(0)).Err
}

// WatchLayoutUpdated subscribes to LayoutUpdated(revision, parent) from the
// menu object. Call the returned stop func when done.
func (it *Item) WatchLayoutUpdated() (<-chan uint32, func(), error) {
	opts := []dbus.MatchOption{
		dbus.WithMatchObjectPath(it.MenuObj),
		dbus.WithMatchInterface("com.canonical.dbusmenu"),
		dbus.WithMatchMember("LayoutUpdated"),
	}
	if err := it.Conn.AddMatchSignal(opts...); err != nil {
		return nil, nil, err
	}
	raw := make(chan *dbus.Signal, 64)
	it.Conn.Signal(raw)
	out := make(chan uint32, 64)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-raw:
				if s != nil && s.Path == it.MenuObj && s.Name == "com.canonical.dbusmenu.LayoutUpdated" && len(s.Body) > 0 {
					if r, ok := s.Body[0].(uint32); ok {
						select {
						case out <- r:
						default:
						}
					}
				}
			case <-done:
				return
			}
		}
	}()
	stop := func() {
		close(done)
		it.Conn.RemoveSignal(raw)
		_ = it.Conn.RemoveMatchSignal(opts...)
	}
	return out, stop, nil
}

// WaitFor polls f every 20ms until it returns true or the timeout passes.
func WaitFor(timeout time.Duration, f func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if f() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return f()
}

// Conn returns the connection the watcher is exported on.
func (w *Watcher) Conn() *dbus.Conn { return w.conn }
