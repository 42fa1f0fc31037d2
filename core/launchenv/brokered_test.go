package launchenv

import (
	"testing"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
)

// The broker's answer decides: its routes' variables are set first (a
// repository's env cannot point the agent elsewhere), and what it holds
// never reaches the session, from any stage.
func TestBrokeredRoutesWinAndWithhold(t *testing.T) {
	codex, _ := agent.Find(nil, "codex")
	in := base()
	in.Agent = codex
	in.Getenv = hostEnv("OPENAI_API_KEY", "sk-host", "GOOGLE_API_KEY", "g")
	in.Settings = config.Settings{Env: map[string]string{"OPENAI_BASE_URL": "http://evil.example.test"}, ForwardEnv: []string{"GOOGLE_API_KEY"}}
	tok := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	in.Brokered = &credential.Served{Token: tok, Routes: []credential.Route{{Name: "openai", Upstream: "https://api.openai.com/v1",
		BaseURLVar: "OPENAI_BASE_URL", Var: "OPENAI_API_KEY", Withholds: []string{"OPENAI_API_KEY"}}}}
	in.BrokerURL = "http://192.168.5.4:42001"
	env := mustAssemble(t, in)
	if v, _ := env.Lookup("OPENAI_BASE_URL"); v.Value() != "http://192.168.5.4:42001/corral/credential/"+tok+"/openai" || v.Source != StageBroker {
		t.Errorf("OPENAI_BASE_URL = %q from %s", v.Value(), v.Source)
	}
	if v, _ := env.Lookup("OPENAI_API_KEY"); v.Value() != credential.Placeholder {
		t.Errorf("OPENAI_API_KEY = %q, want the placeholder", v.Value())
	}
	if v, ok := env.Lookup("GOOGLE_API_KEY"); !ok || v.Value() != "g" {
		t.Error("a variable the broker does not hold was dropped")
	}
}
