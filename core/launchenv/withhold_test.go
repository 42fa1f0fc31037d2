package launchenv

import (
	"testing"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/secret"
)

// TestWithheldNeverReachTheSession: names the broker holds are skipped by
// every stage, and their sources are not even read (a keychain item that
// does not exist does not refuse the session).
func TestWithheldNeverReachTheSession(t *testing.T) {
	claude, _ := agent.Find(nil, "claude")
	in := base()
	in.Agent = claude
	in.Getenv = hostEnv("ANTHROPIC_API_KEY", "sk-host", "CLAUDE_CODE_OAUTH_TOKEN", "oat-host", "MY_TOKEN", "t", "OTHER", "o")
	in.Secrets = &secret.Memory{}
	in.Settings = config.Settings{
		KeychainEnv: map[string]config.SecretRef{"ANTHROPIC_API_KEY": {Service: "missing", Account: "x"}},
		EnvFromHost: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "MY_TOKEN"},
		ForwardEnv:  []string{"ANTHROPIC_API_KEY", "OTHER"},
	}
	in.Withhold = []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}
	env := mustAssemble(t, in)
	for _, n := range in.Withhold {
		if _, ok := env.Lookup(n); ok {
			t.Errorf("%s reached the session", n)
		}
	}
	if v, ok := env.Lookup("OTHER"); !ok || v.Value() != "o" {
		t.Error("a variable that is not withheld was dropped")
	}
}
