package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// TestStopIdleAgreesWithTheMenu: over the shared idle fixture (the one
// core/box's sweep test and the CLI's stop --idle test use), the menu
// counts exactly the boxes StopIdle then stops.
func TestStopIdleAgreesWithTheMenu(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	now := time.Now()
	want := boxtest.IdleFixture(t, l, now)
	svc, _ := boxtest.Service(l, now, audit.ActorApp)
	b := &coreBackend{svc: svc}

	st, err := b.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := menu.Build(st, menu.UI{Now: now}, menu.Limits{})
	title := fmt.Sprintf("Stop idle boxes (%d)", len(want))
	if it, _ := m.Find("stop-idle"); it.Title != title || it.Disabled {
		t.Errorf("menu item %+v, want %q enabled", it, title)
	}
	stopped, err := b.StopIdle(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stopped, want) {
		t.Errorf("StopIdle stopped %q, want %q", stopped, want)
	}
	st, _ = b.Snapshot(context.Background())
	if it, _ := menu.Build(st, menu.UI{Now: now}, menu.Limits{}).Find("stop-idle"); it.Title != "Stop idle boxes (0)" {
		t.Errorf("after StopIdle: %q", it.Title)
	}
}

// TestIsNewDenial: the outcome of a hold is not asked about again.
func TestIsNewDenial(t *testing.T) {
	since := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	deny := egress.Entry{Time: since, Kind: egress.KindConnect, Host: "h.example.test", Port: 443, Reason: egress.ReasonHostNotAllowed}
	held := deny
	held.HeldMS = 30000
	allowed := deny
	allowed.Allowed, allowed.Reason = true, egress.ReasonAllowed
	old := deny
	old.Time = since.Add(-time.Second)
	marker := egress.Entry{Time: since, Kind: egress.KindSessionStart, Session: "s1"}
	for _, c := range []struct {
		name string
		e    egress.Entry
		want bool
	}{{"denial", deny, true}, {"held outcome", held, false}, {"allowed", allowed, false}, {"before since", old, false}, {"session marker", marker, false}} {
		if got := isNewDenial(c.e, since); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSnapshotHostPorts: the menu shows a box's named host ports from
// core's status with core's route sentence (box.HostPortsRoute, which
// corral info prints too), not a route of its own.
func TestSnapshotHostPorts(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	m := boxmeta.Meta{Name: "ide-1", Network: config.NetworkBroker, BrokerPort: 42999, VMType: config.VMTypeQEMU, HostPorts: []int{9229, 63342}}
	if err := boxmeta.Write(l, m); err != nil {
		t.Fatal(err)
	}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorApp)
	st, err := (&coreBackend{svc: svc}).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	route := box.HostPortsRoute(m)
	if len(st.Boxes) != 1 || !slices.Equal(st.Boxes[0].HostPorts, m.HostPorts) || st.Boxes[0].HostPortsRoute != route || route == "" {
		t.Fatalf("snapshot %+v, want host ports %v with route %q", st.Boxes, m.HostPorts, route)
	}
	it, _ := menu.Build(st, menu.UI{Now: time.Now()}, menu.Limits{}).Find("box/ide-1/host-ports")
	if it.Hidden || it.Title != "Host ports 9229, 63342 (IDE bridge)" || !strings.HasSuffix(it.Tooltip, "; "+route) {
		t.Errorf("menu item %+v", it)
	}
}

// TestSnapshotNamesTheFailedStep: a box whose boot provisioning failed
// shows the step in its submenu, as corral up and ls name it.
func TestSnapshotNamesTheFailedStep(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	m := boxmeta.Meta{Name: "web-1", Network: config.NetworkBroker, ProvisionError: "provisioning box web-1 failed in guest/provision/40-network.sh"}
	if err := boxmeta.Write(l, m); err != nil {
		t.Fatal(err)
	}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorApp)
	st, err := (&coreBackend{svc: svc}).Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	it, _ := menu.Build(st, menu.UI{Now: time.Now()}, menu.Limits{}).Find("box/web-1/error")
	if it.Hidden || !strings.Contains(it.Title, "failed in guest/provision/40-network.sh") {
		t.Errorf("menu item %+v", it)
	}
}
