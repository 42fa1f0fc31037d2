package credential

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agent"
)

// TestClaudeApprovesThePlaceholderKey: the seeded .claude.json is JSON and
// approves the brokered placeholder's last 20 characters, so Claude Code
// does not ask about the custom API key.
func TestClaudeApprovesThePlaceholderKey(t *testing.T) {
	a, err := agent.Find(nil, "claude")
	if err != nil {
		t.Fatal(err)
	}
	seeded := ""
	for name, body := range a.FirstRun {
		if strings.HasSuffix(name, ".claude.json") {
			seeded = body
		}
	}
	var global struct {
		CustomAPIKeyResponses struct{ Approved []string } `json:"customApiKeyResponses"`
	}
	if err := json.Unmarshal([]byte(seeded), &global); err != nil {
		t.Fatalf("seeded .claude.json: %v\n%s", err, seeded)
	}
	p := Placeholder
	if want := p[len(p)-20:]; len(global.CustomAPIKeyResponses.Approved) != 1 || global.CustomAPIKeyResponses.Approved[0] != want {
		t.Errorf("approved %q, want [%q]", global.CustomAPIKeyResponses.Approved, want)
	}
}
