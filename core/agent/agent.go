// Package agent is the registry of agents corral can run in a box: the
// command a session starts, the host variables it forwards automatically,
// and the hosts its broker allows by default.
package agent

import (
	"fmt"
	"sort"
)

// Agent describes one agent.
type Agent struct {
	Name string
	// Command is the argv run in the box (before the user's arguments).
	Command []string
	// Passthrough are host variables forwarded when set.
	Passthrough []string
	// Egress are the broker's default allow-list entries for this agent.
	Egress []string
}

var registry = map[string]Agent{
	"claude": {
		Name:        "claude",
		Command:     []string{"claude"},
		Passthrough: []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
		// API, login and token refresh; telemetry hosts are left out on
		// purpose (the wrapper turns telemetry off).
		Egress: []string{"api.anthropic.com", "platform.claude.com", "claude.ai"},
	},
	"shell": {
		Name:    "shell",
		Command: []string{"bash", "-l"},
	},
}

// Lookup returns a registered agent.
func Lookup(name string) (Agent, error) {
	a, ok := registry[name]
	if !ok {
		return Agent{}, fmt.Errorf("unknown agent %q (known: %v)", name, Names())
	}
	return a, nil
}

// Names lists the registered agents.
func Names() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
