package credential

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
)

func ptr(s string) *string { return &s }

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

func TestPlanImplicitClaude(t *testing.T) {
	broker := config.Config{Network: ptr("broker"), AgentCreds: ptr("brokered")}
	for _, tc := range []struct {
		name   string
		cfg    func(c *config.Config)
		getenv func(string) (string, bool)
		want   string // "" = no credential; else header/source
	}{
		{"no key anywhere", nil, env(), ""},
		{"API key in the host env", nil, env("ANTHROPIC_API_KEY", "k"), "x-api-key env ANTHROPIC_API_KEY"},
		{"empty host variable", nil, env("ANTHROPIC_API_KEY", ""), ""},
		{"OAuth token", nil, env("CLAUDE_CODE_OAUTH_TOKEN", "t"), "authorization env CLAUDE_CODE_OAUTH_TOKEN"},
		{"API key wins over OAuth", nil, env("CLAUDE_CODE_OAUTH_TOKEN", "t", "ANTHROPIC_API_KEY", "k"), "x-api-key env ANTHROPIC_API_KEY"},
		{"keychain_env", func(c *config.Config) {
			c.KeychainEnv = map[string]config.SecretRef{"ANTHROPIC_API_KEY": {Service: "s", Account: "a"}}
		}, env(), "x-api-key keychain s/a"},
		{"env_from_host", func(c *config.Config) { c.EnvFromHost = map[string]string{"ANTHROPIC_API_KEY": "MY_KEY"} }, env(), "x-api-key env MY_KEY"},
		{"forwarded opt-out", func(c *config.Config) { c.AgentCreds = ptr("forwarded") }, env("ANTHROPIC_API_KEY", "k"), ""},
		{"full network has no broker", func(c *config.Config) { c.Network = ptr("full") }, env("ANTHROPIC_API_KEY", "k"), ""},
	} {
		c := broker
		if tc.cfg != nil {
			tc.cfg(&c)
		}
		specs := Plan(c, tc.getenv)
		got := ""
		if len(specs) == 1 {
			s := specs[0]
			got = string(s.Header)
			if s.Keychain != nil {
				got += " keychain " + s.Keychain.Service + "/" + s.Keychain.Account
			} else {
				got += " env " + s.EnvFromHost
			}
			if !s.Implicit || s.Upstream != AnthropicUpstream || s.Name != Anthropic {
				t.Errorf("%s: spec %+v", tc.name, s)
			}
		} else if len(specs) > 1 {
			t.Fatalf("%s: %d specs", tc.name, len(specs))
		}
		if got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
		if tc.want != "" && !slices.Equal(Withheld(specs), []string{APIKeyVar, OAuthTokenVar}) {
			t.Errorf("%s: withheld %v", tc.name, Withheld(specs))
		}
	}
}

func TestConfiguredCredentialsAndSessionVars(t *testing.T) {
	c := config.Config{Network: ptr("broker"), Credentials: map[string]config.Credential{
		"anthropic": {Upstream: "https://api.example.test", Header: "authorization", EnvFromHost: "TOK"},
		"github":    {Upstream: "https://git.example.test/", Header: "basic", EnvFromHost: "GH"},
	}}
	specs := Plan(c, env("ANTHROPIC_API_KEY", "k"))
	if len(specs) != 2 || specs[0].Implicit {
		t.Fatalf("specs %+v", specs)
	}
	vars := SessionVars(specs, "http://192.168.5.4:4242")
	got := map[string]string{}
	for _, v := range vars {
		got[v.Name] = v.Value
	}
	want := map[string]string{
		BaseURLVar:           "http://192.168.5.4:4242/corral/credential/anthropic",
		OAuthTokenVar:        Placeholder,
		"GIT_CONFIG_KEY_0":   "url.http://192.168.5.4:4242/corral/credential/github/.insteadOf",
		"GIT_CONFIG_VALUE_0": "https://git.example.test/",
		"GIT_CONFIG_COUNT":   "1",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("vars %v", got)
	}
	for _, v := range vars {
		if strings.Contains(v.Value, "TOK") || strings.Contains(v.Value, "GH") {
			t.Errorf("%s names a secret source: %q", v.Name, v.Value)
		}
	}
	if err := Check(config.Config{Network: ptr("full"), Credentials: c.Credentials}); err == nil {
		t.Error("credentials accepted outside broker mode")
	}
}

func TestBrokerReadsSources(t *testing.T) {
	specs := []Spec{{Name: "a", Upstream: "https://x.test", Header: egress.HeaderAPIKey, EnvFromHost: "SET"},
		{Name: "b", Upstream: "https://x.test", Header: egress.HeaderAPIKey, EnvFromHost: "UNSET"}}
	creds, err := Broker(specs, nil, env("SET", "v"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := creds[0].Secret(context.Background()); v != "v" || err != nil {
		t.Errorf("a: %q %v", v, err)
	}
	if v, err := creds[1].Secret(context.Background()); v != "" || err == nil {
		t.Errorf("b: %q %v", v, err)
	}
	if _, err := Broker([]Spec{{Name: "c", Upstream: "https://x.test", Header: egress.HeaderAPIKey, EnvFromHost: "SET", CA: "/nonexistent.pem"}}, nil, env("SET", "v")); err == nil {
		t.Error("a missing CA file was accepted")
	}
}
