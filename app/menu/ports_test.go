package menu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxstate"
)

// TestPortItems: a running box shows "Open localhost:N" for each port it
// forwards, in fixed slots (hidden when unused, so the submenu keeps its
// shape across states); a stopped box shows none, and a port outside
// 1-65535 is never offered.
func TestPortItems(t *testing.T) {
	tests := []struct {
		name  string
		box   BoxView
		shown []int
	}{
		{"none", BoxView{Name: "web", State: boxstate.Running}, nil},
		{"two", BoxView{Name: "web", State: boxstate.Running, Ports: []int{3000, 8080}}, []int{3000, 8080}},
		{"stopped", BoxView{Name: "web", State: boxstate.Stopped, Ports: []int{3000}}, nil},
		{"more than the slots", BoxView{Name: "web", State: boxstate.Running, Ports: []int{3000, 3001, 3002, 3003}}, []int{3000, 3001, 3002}},
		{"out of range", BoxView{Name: "web", State: boxstate.Running, Ports: []int{0, 70000, 5173}}, []int{0, 0, 5173}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(State{Boxes: []BoxView{tt.box}}, UI{}, Limits{})
			for i := range 3 {
				it, ok := m.Find(fmt.Sprintf("box/web/port/%d", i))
				if !ok {
					t.Fatalf("no port slot %d in\n%s", i, m.Text())
				}
				want := 0
				if i < len(tt.shown) {
					want = tt.shown[i]
				}
				if want == 0 {
					if !it.Hidden {
						t.Errorf("slot %d shown: %+v", i, it)
					}
					continue
				}
				if it.Hidden || it.Disabled || it.Title != fmt.Sprintf("Open localhost:%d", want) ||
					it.Action != (Action{Kind: ActOpenPort, Box: "web", Port: want}) {
					t.Errorf("slot %d = %+v, want Open localhost:%d", i, it, want)
				}
			}
			if _, ok := m.Find("box/web/port/3"); ok {
				t.Error("a fourth port slot")
			}
		})
	}
}

// TestHostPortsItem: a box with named host ports (host_ports, the IDE
// bridge) shows them in its submenu as one label, not clickable, with the
// route core describes in the tooltip, running or not (as corral info
// shows them); a box without any has the slot hidden, so the submenu
// keeps its shape, and a port outside 1-65535 is never shown.
func TestHostPortsItem(t *testing.T) {
	route := "the host's 127.0.0.1, at the broker address in the box; a qemu guestfwd each, host-enforced"
	tests := []struct {
		name    string
		box     BoxView
		title   string // "" = hidden
		tooltip string
	}{
		{"none", BoxView{Name: "web", State: boxstate.Running}, "", ""},
		{"two", BoxView{Name: "web", State: boxstate.Running, HostPorts: []int{9229, 63342}, HostPortsRoute: route},
			"Host ports 9229, 63342 (IDE bridge)", "The box may reach these ports of this machine (host_ports): 9229, 63342; " + route},
		{"stopped", BoxView{Name: "web", State: boxstate.Stopped, HostPorts: []int{9229}, HostPortsRoute: route},
			"Host ports 9229 (IDE bridge)", "The box may reach these ports of this machine (host_ports): 9229; " + route},
		{"no route known", BoxView{Name: "web", State: boxstate.Running, HostPorts: []int{9229}},
			"Host ports 9229 (IDE bridge)", "The box may reach these ports of this machine (host_ports): 9229"},
		{"out of range", BoxView{Name: "web", State: boxstate.Running, HostPorts: []int{0, 70000, -1, 9229}, HostPortsRoute: route},
			"Host ports 9229 (IDE bridge)", "The box may reach these ports of this machine (host_ports): 9229; " + route},
		{"only out of range", BoxView{Name: "web", State: boxstate.Running, HostPorts: []int{0, 70000}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Build(State{Boxes: []BoxView{tt.box}}, UI{}, Limits{})
			it, ok := m.Find("box/web/host-ports")
			if !ok {
				t.Fatalf("no host ports slot in\n%s", m.Text())
			}
			if tt.title == "" {
				if !it.Hidden {
					t.Errorf("shown: %+v", it)
				}
				return
			}
			if it.Hidden || !it.Disabled || it.Title != tt.title || it.Tooltip != tt.tooltip || it.Action != (Action{}) {
				t.Errorf("item = %+v\nwant title %q tooltip %q, disabled, no action", it, tt.title, tt.tooltip)
			}
			if !strings.Contains(m.Text(), "  "+tt.title+" [disabled]\n") {
				t.Errorf("not in the box's submenu:\n%s", m.Text())
			}
		})
	}
}
