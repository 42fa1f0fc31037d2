package app

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
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
