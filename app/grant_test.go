package app

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/config/granttest"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// TestAllowAgreesWithTheGrantCheck: the menu's and notifications' Allow
// grants a corpus entry exactly when the one grant check does not refuse
// it, as corral allow does (cmd/corral/cli TestGrantPathsAgree); a range is
// config-only and never an approval. AllowDomain ("*." + the domain the
// notification names) goes through the same check.
func TestAllowAgreesWithTheGrantCheck(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorApp)
	b := &coreBackend{svc: svc}
	for _, c := range granttest.Egress {
		v := config.CheckGrant("egress", c.Entry, config.GrantContext{})
		err := b.Allow(context.Background(), "web-3f2a1c", c.Entry, AllowAlways)
		want := v.Risk == config.RiskRefused || isRange(c.Entry)
		if (err != nil) != want {
			t.Errorf("Allow %q: %v, want refused=%v (%s)", c.Entry, err, want, v.Why)
		}
	}
	for _, d := range []struct {
		domain string
		ok     bool
	}{{"example.com", true}, {"com", false}, {"co.uk", false}, {"github.io", false}} {
		if err := b.Allow(context.Background(), "web-3f2a1c", d.domain, AllowDomain); (err == nil) != d.ok {
			t.Errorf("Allow domain %q: %v, want ok=%v", d.domain, err, d.ok)
		}
	}
}

func isRange(s string) bool {
	e, err := egress.ParseAllowEntry(s)
	return err == nil && e.IsRange()
}
