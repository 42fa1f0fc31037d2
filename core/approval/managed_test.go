package approval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
)

// TestManagedFloorBindsApprovals: approvals written before the
// organisation's policy (an "always" approval, a denied host) are held to
// it once it is installed: the always approval lapses at max_approval, the
// denied host leaves the allow-list, and no new grant passes it.
func TestManagedFloorBindsApprovals(t *testing.T) {
	t.Setenv(config.ManagedEnv, filepath.Join(t.TempDir(), "none.toml"))
	s, c, _ := newStore(t)
	for _, e := range []string{"always.example.test", "db.corp.example"} {
		if _, err := s.Add(e, ScopeAlways, audit.ActorCLI); err != nil {
			t.Fatal(err)
		}
	}
	policy := filepath.Join(t.TempDir(), "managed.toml")
	os.WriteFile(policy, []byte("deny_egress = [\"*.corp.example\"]\nmax_approval = \"8h\"\n"), 0o644)
	t.Setenv(config.ManagedEnv, policy)

	list, err := s.List(c.now())
	if err != nil || len(list) != 2 {
		t.Fatalf("%v %+v", err, list)
	}
	rules := WithApprovals(nil, list)
	for _, r := range rules {
		if got := r.Expires.Sub(list[0].Added); got != 8*time.Hour {
			t.Errorf("%s: in force for %s, want 8h", r.Entry, got)
		}
	}
	if allowed := Allowed(rules); len(allowed) != 1 || allowed[0].Entry != "always.example.test" {
		t.Errorf("allowed %+v", allowed)
	}
	c.t = c.t.Add(9 * time.Hour)
	if active, _ := s.Active(c.now()); len(active) != 0 {
		t.Errorf("active after max_approval: %v", active)
	}
	if _, err := s.Add("new.example.test", ScopeAlways, audit.ActorCLI); err == nil || !strings.Contains(err.Error(), "the organisation's policy ("+policy+")") {
		t.Errorf("always under max_approval: %v", err)
	}
	if _, err := s.Add("x.corp.example", ScopeSession, audit.ActorCLI); err == nil || !strings.Contains(err.Error(), "never allows *.corp.example") {
		t.Errorf("denied host: %v", err)
	}
}

// TestPolicyRefusalsAreAudited: a live allow the organisation's policy
// refuses is recorded as a refused event (for its SIEM); a malformed
// entry is only an error.
func TestPolicyRefusalsAreAudited(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "managed.toml")
	os.WriteFile(policy, []byte("deny_egress = [\"*.corp.example\"]\nmax_approval = \"8h\"\n"), 0o644)
	t.Setenv(config.ManagedEnv, policy)
	_, _, l := newStore(t)
	if _, err := Allow(l, testBox, "db.corp.example", ScopeSession, audit.ActorApp); err == nil {
		t.Fatal("denied host allowed")
	}
	if _, err := Allow(l, testBox, "api.example.test", ScopeAlways, audit.ActorCLI); err == nil {
		t.Fatal("always allowed under max_approval")
	}
	if _, err := Allow(l, testBox, "https://x/", ScopeSession, audit.ActorCLI); err == nil {
		t.Fatal("malformed entry allowed")
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{})
	if err != nil || len(evs) != 2 {
		t.Fatalf("%v: %+v", err, evs)
	}
	for i, want := range []string{"db.corp.example", "api.example.test"} {
		ev := evs[i]
		if ev.Kind != audit.KindRefused || ev.Fields[audit.FieldOf] != "allow" || ev.Fields["entry"] != want ||
			!strings.Contains(ev.Fields[audit.FieldReason].(string), "the organisation's policy") {
			t.Errorf("event %d: %+v", i, ev)
		}
	}
}
