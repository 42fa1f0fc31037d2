package approval

import (
	"testing"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/config/granttest"
	"github.com/corral-dev/corral/core/paths"
)

// TestAllowAgreesWithTheGrantCheck: corral allow's core (and the app's,
// which calls the same Allow) grants a corpus entry exactly when the one
// grant check does not refuse it; ranges are config-only and never
// approvals. AllowList marks an old approval the check refuses, and
// Entries leaves it out.
func TestAllowAgreesWithTheGrantCheck(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	for _, c := range granttest.Egress {
		v := config.CheckGrant("egress", c.Entry, config.GrantContext{})
		_, err := Allow(l, "web-3f2a1c", c.Entry, ScopeAlways, audit.ActorCLI)
		_, cerr := Canonical(c.Entry)
		isRange := cerr != nil && v.Risk != config.RiskRefused // a valid range: config only
		if want := v.Risk == config.RiskRefused || isRange; (err != nil) != want {
			t.Errorf("allow %q: %v, want refused=%v (%s)", c.Entry, err, want, v.Why)
		}
	}
	rules, err := AllowList(noAgent(), Toolchains{}, []Approval{{Entry: "*.com", Scope: ScopeAlways}, {Entry: "api.example.com", Scope: ScopeAlways}})
	if err != nil {
		t.Fatal(err)
	}
	if !rules[0].Refused() || rules[1].Refused() {
		t.Errorf("rules %+v", rules)
	}
	if got := Entries(rules); len(got) != 1 || got[0].String() != "api.example.com" {
		t.Errorf("Entries = %v", got)
	}
}
