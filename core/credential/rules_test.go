package credential

import (
	"testing"

	"github.com/corral-dev/corral/core/config"
)

// TestPlanCarriesRules: a configured credential's rules reach the broker's
// credential, whichever source serves it.
func TestPlanCarriesRules(t *testing.T) {
	net := config.NetworkBroker
	c := config.Config{Network: &net, Credentials: map[string]config.Credential{
		"git": {Upstream: "https://git.example.test", Header: "basic", EnvFromHost: "GH_TOKEN", Paths: []string{"/org/repo"}, ReadOnly: true},
	}}
	var spec *Spec
	for _, s := range Plan(settings(c)) {
		if s.Name == "git" {
			spec = &s
		}
	}
	if spec == nil || spec.Rules == nil || !spec.Rules.ReadOnly || spec.Rules.Paths[0] != "/org/repo" {
		t.Fatalf("plan = %+v", spec)
	}
	cred, _, ok := source(*spec, HolderConfig{Getenv: func(string) (string, bool) { return "tok", true }})
	if !ok || cred.Rules != spec.Rules {
		t.Errorf("served credential rules = %+v", cred.Rules)
	}
}
