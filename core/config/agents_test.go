package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agent"
)

// TestAgentsFromTrustedLayers: an agent defined in the global layer can be
// a box's agent, and the registry built from the effective config finds
// it beside the built-ins.
func TestAgentsFromTrustedLayers(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(global, []byte(`agent = "aider"
[agents.aider]
command = ["aider", "--yes-always"]
install = "pip install --break-system-packages aider-chat==0.86.0"
forward_env = ["OPENAI_API_KEY"]
egress = ["api.openai.com"]
state_dir = ".aider"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	proj := newProject(t, nil)
	res, err := Load(request(proj, global))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.Find(res.Config.Agents, *res.Config.Agent)
	if err != nil || a.Builtin || !slices.Equal(a.Command, []string{"aider", "--yes-always"}) || a.StateDir != ".aider" ||
		!slices.Equal(a.Passthrough, []string{"OPENAI_API_KEY"}) || !slices.Equal(a.Egress, []string{"api.openai.com"}) {
		t.Fatalf("agent = %+v, %v", a, err)
	}
	if got := agent.Names(res.Config.Agents); !slices.Equal(got, []string{"aider", "claude", "codex", "gemini", "shell"}) {
		t.Errorf("names = %v", got)
	}
}

// TestAgentKeyNeedsADefinition: agent must name a built-in or a defined
// agent, wherever the definition comes from.
func TestAgentKeyNeedsADefinition(t *testing.T) {
	dir := t.TempDir()
	global := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(global, []byte("agent = \"aider\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(request(newProject(t, nil), global))
	if err == nil || !strings.Contains(err.Error(), `agent = "aider": unknown agent`) || !strings.Contains(err.Error(), "[agents.aider]") {
		t.Fatalf("err = %v", err)
	}
	for _, name := range agent.Builtins() {
		if err := os.WriteFile(global, []byte("agent = \""+name+"\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(request(newProject(t, nil), global)); err != nil {
			t.Errorf("built-in %s: %v", name, err)
		}
	}
}

func TestAgentDefinitionValidation(t *testing.T) {
	for _, tc := range []struct {
		toml string
		want []string // nil = valid
	}{
		{"[agents.aider]\ncommand = [\"aider\"]\n", nil},
		{"[agents.aider]\ninstall = \"true\"\n", []string{"agents.aider.command: missing"}},
		{"[agents.claude]\ncommand = [\"x\"]\n", []string{"agents.claude: a built-in agent"}},
		{"[agents.Bad_Name]\ncommand = [\"x\"]\n", []string{"agents.Bad_Name: not an agent name"}},
		{"[agents.a]\ncommand = [\"-x\", \"\"]\n", []string{"agents.a.command[0]", "agents.a.command[1]"}},
		{"[agents.a]\ncommand = [\"a\"]\nforward_env = [\"NOT-A-NAME\"]\n", []string{`agents.a.forward_env = "NOT-A-NAME": not a variable name`}},
		{"[agents.a]\ncommand = [\"a\"]\negress = [\"bad host\"]\n", []string{`agents.a.egress = "bad host"`}},
		{"[agents.a]\ncommand = [\"a\"]\nstate_dir = \"../../etc\"\n", []string{"agents.a.state_dir"}},
		{"[agents.a]\ncommand = [\"a\"]\nstate_dir = \"/root\"\n", []string{"agents.a.state_dir"}},
		{"[agents.a]\ncommand = [\"a\"]\nstate_dir = \"a/./b\"\n", []string{"agents.a.state_dir"}},
		{"[agents.a]\ncommand = [\"a\"]\nCommand = [\"b\"]\n", []string{"agents.a.Command: unknown key"}},
	} {
		l, err := Parse(KindGlobal, "g.toml", []byte(tc.toml))
		msg := ""
		if err != nil {
			msg = err.Error() + "\n"
		}
		for _, e := range validate(l) {
			msg += e.Error() + "\n"
		}
		if tc.want == nil && msg != "" {
			t.Errorf("%q: %s", tc.toml, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q: %q not in %s", tc.toml, w, msg)
			}
		}
	}
}
