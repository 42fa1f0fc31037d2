package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestMenuAllowRefusedByManagedPolicy: the menu's Allow refuses what the
// organisation's managed policy forbids (a denied host, an approval longer
// than max_approval) and says the policy did, naming its file; what the
// policy permits is granted.
func TestMenuAllowRefusedByManagedPolicy(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "managed.toml")
	if err := os.WriteFile(policy, []byte("deny_egress = [\"*.corp.example\"]\nmax_approval = \"8h\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.ManagedEnv, policy)
	l := paths.Layout{Home: t.TempDir()}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorApp)
	b := &coreBackend{svc: svc}
	says := "the organisation's policy (" + policy + ")"
	for _, c := range []struct {
		host  string
		scope AllowScope
		want  string
	}{
		{"db.corp.example", AllowSession, says + " never allows *.corp.example"},
		{"api.example.test", AllowAlways, says + " refuses it: approvals last at most 8h0m0s"},
		{"api.example.test", AllowDomain, says + " refuses it: approvals last at most 8h0m0s"},
		{"api.example.test", AllowSession, ""},
		{"api.example.test", AllowHour, ""},
	} {
		err := b.Allow(context.Background(), "web-3f2a1c", c.host, c.scope)
		if c.want == "" {
			if err != nil {
				t.Errorf("Allow %s %v: %v", c.host, c.scope, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Allow %s %v: %v, want %q", c.host, c.scope, err, c.want)
		}
	}
}
