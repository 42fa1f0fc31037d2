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
