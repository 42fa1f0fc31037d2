package broker

import (
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
)

// TestBrokerPolicyHonoursManagedDeny: the policy a box's broker loads
// refuses a name the organisation denies, and a host the box's config
// allows (the agent's api.anthropic.com) when it resolves into a denied
// range.
func TestBrokerPolicyHonoursManagedDeny(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "managed.toml")
	if err := os.WriteFile(policy, []byte("deny_egress = [\"*.corp.example.test\", \"203.0.113.0/24\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.ManagedEnv, policy)
	l, name := newBox(t, "")
	m, err := boxmeta.Read(l, name)
	if err != nil {
		t.Fatal(err)
	}
	bp, err := newBoxPolicy(l, name, m.Project, linux, nil, discard())
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := bp.load()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host string
		ip   string
	}{{"db.corp.example.test", ""}, {"api.anthropic.com", "203.0.113.9"}} {
		r := egress.Request{Kind: egress.KindConnect, Host: c.host, Port: 443}
		if c.ip != "" {
			r.IP = netip.MustParseAddr(c.ip)
		}
		if d := p.Decide(r); d.Reason != egress.ReasonPolicyDenied {
			t.Errorf("%s (%s): %s, want %s", c.host, c.ip, d.Reason, egress.ReasonPolicyDenied)
		}
	}
}
