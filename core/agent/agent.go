// Package agent is the registry of agents corral can run in a box: the
// command a session starts, the host variables it forwards automatically,
// and the hosts its broker allows by default.
package agent

import (
	"encoding/json"
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
	// FirstRun are the files corral writes into the agent's host-owned
	// state template (file name relative to the state directory ->
	// content), so that a seeded box starts without first-run prompts.
	FirstRun map[string]string
	// Personalize adjusts a box's copy of the template for its project
	// directory in the guest (e.g. marks the folder trusted); nil = as is.
	// files maps names relative to the state directory to contents.
	Personalize func(files map[string][]byte, projectDir string) error
}

var registry = map[string]Agent{
	"claude": {
		Name:        "claude",
		Command:     []string{"claude"},
		Passthrough: []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
		// API, login and token refresh; telemetry hosts are left out on
		// purpose (the wrapper turns telemetry off).
		Egress: []string{"api.anthropic.com", "platform.claude.com", "claude.ai"},
		// CLAUDE_CONFIG_DIR is the state directory (the wrapper in
		// guest/provision/30-agent.sh sets it), so .claude.json lives in it
		// too. Keys from Claude Code's docs (settings, permission-modes,
		// errors); see shared notes claude-in-a-box.md section 4.
		FirstRun: map[string]string{
			"settings.json": `{
  "permissions": { "defaultMode": "bypassPermissions" },
  "skipDangerousModePermissionPrompt": true,
  "env": {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL": "1"
  },
  "tui": "default"
}
`,
			claudeGlobal: `{
  "hasCompletedOnboarding": true,
  "lastOnboardingVersion": "99.0.0",
  "bypassPermissionsModeAccepted": true,
  "autoUpdates": false
}
`,
		},
		Personalize: trustProject,
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

// claudeGlobal is Claude Code's global config file inside CLAUDE_CONFIG_DIR.
const claudeGlobal = ".claude.json"

// trustProject marks the box's project folder as trusted in .claude.json
// (projects[dir].hasTrustDialogAccepted), the key Claude Code's own error
// text names: the box is the boundary, so the folder trust prompt only gets
// in the way. A template without the file, or with one that is not a JSON
// object, is left alone.
func trustProject(files map[string][]byte, projectDir string) error {
	b, ok := files[claudeGlobal]
	if !ok || projectDir == "" {
		return nil
	}
	var global map[string]any
	if err := json.Unmarshal(b, &global); err != nil || global == nil {
		return nil
	}
	projects, _ := global["projects"].(map[string]any)
	if projects == nil {
		projects = map[string]any{}
	}
	p, _ := projects[projectDir].(map[string]any)
	if p == nil {
		p = map[string]any{}
	}
	p["hasTrustDialogAccepted"] = true
	projects[projectDir] = p
	global["projects"] = projects
	out, err := json.MarshalIndent(global, "", "  ")
	if err != nil {
		return fmt.Errorf("marking %s trusted in %s: %w", projectDir, claudeGlobal, err)
	}
	files[claudeGlobal] = append(out, '\n')
	return nil
}
