package agent

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/guest"
)

func TestBuiltins(t *testing.T) {
	if got := Builtins(); !slices.Equal(got, []string{"claude", "codex", "gemini", "shell"}) {
		t.Fatalf("built-ins = %v", got)
	}
	for _, tc := range []struct {
		name, state, forwards string
		npm                   int
	}{
		{"claude", ".claude", "ANTHROPIC_API_KEY", 1},
		{"codex", ".codex", "OPENAI_API_KEY", 1},
		{"gemini", ".gemini", "GEMINI_API_KEY", 2},
	} {
		a, err := Find(nil, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Builtin || a.StateDir != tc.state || !slices.Contains(a.Passthrough, tc.forwards) || len(a.NPM) != tc.npm || len(a.Egress) == 0 {
			t.Errorf("%s = %+v", tc.name, a)
		}
		if a.Install == "" || a.Install != guest.AgentInstall(tc.name) {
			t.Errorf("%s: install step is not guest/agents/%s.sh", tc.name, tc.name)
		}
		if p := Check(tc.name+"-x", Def{Command: a.Command, StateDir: a.StateDir, ForwardEnv: a.Passthrough}); len(p) != 0 {
			t.Errorf("%s's own values fail the definition check: %v", tc.name, p)
		}
	}
	sh, _ := Find(nil, "shell")
	if sh.Install != "" || len(sh.Egress) != 0 || sh.StateDir != "" {
		t.Errorf("shell = %+v", sh)
	}
}

func TestConfigDefinedAgent(t *testing.T) {
	defs := map[string]Def{"aider": {Command: []string{"aider", "--yes-always"}, Install: "pip install aider-chat", ForwardEnv: []string{"OPENAI_API_KEY"}, Egress: []string{"api.openai.com"}, StateDir: ".aider"}}
	a, err := Find(defs, "aider")
	if err != nil || a.Builtin || a.Install != "pip install aider-chat" || a.StateDir != ".aider" || a.NPM != nil {
		t.Fatalf("aider = %+v, %v", a, err)
	}
	// The Agent does not alias the config's slices.
	a.Command[0] = "changed"
	if defs["aider"].Command[0] != "aider" {
		t.Error("Find aliases the definition's command")
	}
	if got := Names(defs); !slices.Equal(got, []string{"aider", "claude", "codex", "gemini", "shell"}) {
		t.Errorf("names = %v", got)
	}
	if all := All(defs); len(all) != 5 || all[0].Name != "aider" {
		t.Errorf("all = %v", all)
	}
	// A definition never shadows a built-in (config refuses it; Find
	// prefers the built-in anyway).
	c, _ := Find(map[string]Def{"claude": {Command: []string{"evil"}}}, "claude")
	if c.Command[0] != "claude" {
		t.Errorf("a definition replaced the built-in claude: %v", c.Command)
	}
	if _, err := Find(defs, "nope"); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "aider, claude") {
		t.Errorf("unknown agent: %v", err)
	}
}

func TestCheck(t *testing.T) {
	long := strings.Repeat("a", MaxArgLen+1)
	for _, tc := range []struct {
		name string
		def  Def
		keys []string // problem keys; nil = valid
	}{
		{"aider", Def{Command: []string{"aider"}}, nil},
		{"my-agent2", Def{Command: []string{"/opt/x/bin/agent", "--flag"}, StateDir: ".config/agent"}, nil},
		{"codex", Def{Command: []string{"x"}}, []string{""}},
		{"Aider", Def{Command: []string{"x"}}, []string{""}},
		{"-x", Def{Command: []string{"x"}}, []string{""}},
		{strings.Repeat("a", 33), Def{Command: []string{"x"}}, []string{""}},
		{"a", Def{}, []string{"command"}},
		{"a", Def{Command: make([]string, MaxCommandArgs+1)}, nil}, // checked below: count plus each empty argument
		{"a", Def{Command: []string{"--rm"}}, []string{"command[0]"}},
		{"a", Def{Command: []string{"a", "b\nc"}}, []string{"command[1]"}},
		{"a", Def{Command: []string{"a", long}}, []string{"command[1]"}},
		{"a", Def{Command: []string{"a"}, Install: "x\x00"}, []string{"install"}},
		{"a", Def{Command: []string{"a"}, Install: strings.Repeat("#", MaxInstall+1)}, []string{"install"}},
		{"a", Def{Command: []string{"a"}, ForwardEnv: []string{"A-B"}}, []string{"forward_env"}},
		{"a", Def{Command: []string{"a"}, StateDir: "../x"}, []string{"state_dir"}},
		{"a", Def{Command: []string{"a"}, StateDir: "/etc"}, []string{"state_dir"}},
		{"a", Def{Command: []string{"a"}, StateDir: "a//b"}, []string{"state_dir"}},
		{"a", Def{Command: []string{"a"}, StateDir: "."}, []string{"state_dir"}},
		{"a", Def{Command: []string{"a"}, StateDir: "a b"}, []string{"state_dir"}},
	} {
		var keys []string
		for _, p := range Check(tc.name, tc.def) {
			keys = append(keys, p.Key)
		}
		if tc.keys == nil && len(tc.def.Command) > MaxCommandArgs {
			if len(keys) == 0 || keys[0] != "command" {
				t.Errorf("%d arguments: %v", len(tc.def.Command), keys)
			}
			continue
		}
		if !slices.Equal(keys, tc.keys) {
			t.Errorf("Check(%q, %+v) keys = %q, want %q", tc.name, tc.def, keys, tc.keys)
		}
	}
}

// TestBuiltinEnv: what built-in agents set in every session are valid,
// unreserved variable names; only gemini sets any (its folder trust).
func TestBuiltinEnv(t *testing.T) {
	for _, n := range Builtins() {
		a, _ := Find(nil, n)
		for k, v := range a.Env {
			if !envNameRe().MatchString(k) || strings.HasPrefix(k, "CORRAL_") || strings.ContainsAny(v, "\x00\n") {
				t.Errorf("%s: Env %q = %q", n, k, v)
			}
		}
		if want := n == "gemini"; (a.Env[GeminiTrustVar] == "true") != want || (len(a.Env) > 0) != want {
			t.Errorf("%s: Env %v", n, a.Env)
		}
	}
	if a, err := Find(map[string]Def{"aider": {Command: []string{"aider"}}}, "aider"); err != nil || a.Env != nil {
		t.Errorf("a defined agent got Env %v (%v)", a.Env, err)
	}
}
