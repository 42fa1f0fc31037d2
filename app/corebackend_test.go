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
