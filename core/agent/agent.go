// Package agent is the registry of agents corral can run in a box: the
// command a session starts, the install step of the golden image, the host
// variables it forwards, the hosts its broker allows by default and the
// directory where it keeps its state.
//
// The registry is data: the built-in agents (claude, codex, gemini, shell)
// and the [agents.NAME] tables of the trusted config layers go through the
// same Agent value, read by the golden build (core/limayaml renders the
// install step and its parameters; guest/provision/30-agent.sh runs it),
// the session (core/launchenv forwards Passthrough), the broker
// (core/approval adds Egress) and the CLI (`corral agents`). A repository
// may not define agents: an install step is code that runs as root in the
// golden build (core/config refuses [agents] in .corral.toml).
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/guest"
)

// Agent describes one agent.
type Agent struct {
	Name string
	// Builtin is false for agents defined in config ([agents.NAME]).
	Builtin bool
	// Command is the argv run in the box (before the user's arguments).
	Command []string
	// Install is the shell script run as root once when the golden image
	// is built (guest/provision/30-agent.sh runs it with the verified
	// tarballs of NPM as its arguments); "" installs nothing.
	Install string
	// NPM are the pinned npm packages (core/pins patterns, see
	// pins.Resolve) the install step unpacks, in argument order.
	NPM []string
	// Passthrough are host variables forwarded when set.
	Passthrough []string
	// Egress are the broker's default allow-list entries for this agent.
	Egress []string
	// StateDir is where the agent keeps its state, relative to the box
	// user's home (".codex"); provisioning links it to the box's agent
	// state directory (core/agentstate GuestDir). "" keeps none.
	StateDir string
	// Instructions is the file in StateDir the agent reads its user's
	// instructions from at every start (Claude Code's CLAUDE.md, Codex's
	// AGENTS.md, Gemini CLI's GEMINI.md): provisioning keeps corral's
	// block in it (guest.AgentInstructions: how to ask for a host). ""
	// writes none (the shell, agents from config).
	Instructions string
	// FirstRun are the files corral writes into the agent's host-owned
	// state template (file name relative to the state directory ->
	// content), so that a seeded box starts without first-run prompts.
	FirstRun map[string]string
	// Env are variables every session of this agent gets unless another
	// source sets the same name (core/launchenv's last stage, so the
	// user's env or forward_env wins). Built-in agents only: they are
	// corral's settings for the agent inside a box, never secrets.
	Env map[string]string
	// Personalize adjusts a box's copy of the template for its project
	// directory in the guest (e.g. marks the folder trusted); nil = as is.
	// files maps names relative to the state directory to contents.
	Personalize func(files map[string][]byte, projectDir string) error
}

// Def is one [agents.NAME] table of a trusted config layer.
type Def struct {
	// Command is the argv a session runs (required).
	Command []string `toml:"command" json:"command"`
	// Install is a shell script run as root once in the golden build.
	Install string `toml:"install" json:"install,omitempty"`
	// ForwardEnv are host variables forwarded into its sessions when set.
	ForwardEnv []string `toml:"forward_env" json:"forward_env,omitempty"`
	// Egress are hosts its broker allows (as the egress key's entries).
	Egress []string `toml:"egress" json:"egress,omitempty"`
	// StateDir is its state directory relative to the box user's home.
	StateDir string `toml:"state_dir" json:"state_dir,omitempty"`
}

// Caps of a definition: it reaches a Lima template and a guest script's
// parameters.
const (
	MaxCommandArgs = 32
	MaxArgLen      = 256
	MaxInstall     = 64 << 10
	MaxList        = 32
)

var (
	nameRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`) })
	envNameRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`) })
	stateDirRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$`) })
)

// ValidName reports whether n may name an agent: it becomes a guest
// directory name, a tmux session name and a CLI argument.
func ValidName(n string) bool { return nameRe().MatchString(n) }

// Problem is one invalid field of a definition.
type Problem struct {
	Key    string // relative to the [agents.NAME] table, e.g. "command[1]"; "" is the table
	Value  string // quoted
	Reason string
}

// Check validates a definition. The egress entries are checked by the
// caller (core/config owns the allow-list syntax).
func Check(name string, d Def) []Problem {
	var out []Problem
	bad := func(k, v, r string) { out = append(out, Problem{Key: k, Value: v, Reason: r}) }
	if !ValidName(name) {
		bad("", "", "not an agent name (lowercase letters, digits and -, at most 32)")
	}
	if _, ok := builtins()[name]; ok {
		bad("", "", "a built-in agent: choose another name")
	}
	switch {
	case len(d.Command) == 0:
		bad("command", "", "missing: the argv a session runs, e.g. [\"aider\", \"--yes-always\"]")
	case len(d.Command) > MaxCommandArgs:
		bad("command", "", fmt.Sprintf("at most %d arguments", MaxCommandArgs))
	}
	for i, a := range d.Command {
		if a == "" || len(a) > MaxArgLen || strings.ContainsAny(a, "\x00\n\r") || (i == 0 && strings.HasPrefix(a, "-")) {
			bad(fmt.Sprintf("command[%d]", i), fmt.Sprintf("%q", cut(a)), "empty, too long, a line break or an option where the program goes")
		}
	}
	if len(d.Install) > MaxInstall || strings.ContainsRune(d.Install, 0) {
		bad("install", "", fmt.Sprintf("at most %d bytes of shell, no NUL", MaxInstall))
	}
	if len(d.ForwardEnv) > MaxList {
		bad("forward_env", "", fmt.Sprintf("at most %d names", MaxList))
	}
	for _, n := range d.ForwardEnv {
		if !envNameRe().MatchString(n) {
			bad("forward_env", fmt.Sprintf("%q", cut(n)), "not a variable name")
		}
	}
	if len(d.Egress) > MaxList {
		bad("egress", "", fmt.Sprintf("at most %d entries", MaxList))
	}
	if d.StateDir != "" {
		clean := path.Clean(d.StateDir)
		if !stateDirRe().MatchString(d.StateDir) || clean != d.StateDir || clean == "." || strings.HasPrefix(clean, "..") || len(d.StateDir) > MaxArgLen {
			bad("state_dir", fmt.Sprintf("%q", cut(d.StateDir)), "must be a plain path inside the box user's home, like \".aider\"")
		}
	}
	return out
}

func cut(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// FromDef turns a config definition into an Agent.
func FromDef(name string, d Def) Agent {
	return Agent{
		Name: name, Command: slices.Clone(d.Command), Install: d.Install,
		Passthrough: slices.Clone(d.ForwardEnv), Egress: slices.Clone(d.Egress), StateDir: d.StateDir,
	}
}

var builtins = sync.OnceValue(func() map[string]Agent {
	return map[string]Agent{
		"claude": {
			Name:        "claude",
			Builtin:     true,
			Command:     []string{"claude"},
			Install:     guest.AgentInstall("claude"),
			NPM:         []string{"@anthropic-ai/claude-code-linux-{arch}"},
			Passthrough: []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"},
			// API, login and token refresh; telemetry hosts are left out on
			// purpose (the wrapper turns telemetry off).
			Egress:       []string{"api.anthropic.com", "platform.claude.com", "claude.ai"},
			StateDir:     ".claude",
			Instructions: "CLAUDE.md", // read from CLAUDE_CONFIG_DIR, the state directory
			// CLAUDE_CONFIG_DIR is the state directory (the wrapper in
			// guest/agents/claude.sh sets it), so .claude.json lives in it
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
  "autoUpdates": false,
  "customApiKeyResponses": { "approved": ["` + placeholderKeySuffix + `"], "rejected": [] }
}
`,
			},
			Personalize: trustProject,
		},
		// Codex's npm platform package holds a static (musl) native binary;
		// the Node launcher of the main package is not needed.
		"codex": {
			Name:        "codex",
			Builtin:     true,
			Command:     []string{"codex"},
			Install:     guest.AgentInstall("codex"),
			NPM:         []string{"@openai/codex@*-linux-{arch}"},
			Passthrough: []string{"OPENAI_API_KEY"},
			// The API the forwarded key is for; a ChatGPT login needs more
			// hosts (allow them with corral allow when asked).
			Egress:       []string{"api.openai.com"},
			StateDir:     ".codex",
			Instructions: "AGENTS.md", // ~/.codex/AGENTS.md, Codex's global instructions
		},
		// Gemini CLI is a JavaScript bundle that needs Node >= 20 (Debian 12
		// has 18): Node comes from its own pinned npm package.
		"gemini": {
			Name:        "gemini",
			Builtin:     true,
			Command:     []string{"gemini"},
			Install:     guest.AgentInstall("gemini"),
			NPM:         []string{"node-linux-{arch}", "@google/gemini-cli"},
			Passthrough: []string{"GEMINI_API_KEY"},
			// The API the forwarded key is for; a Google login needs more hosts.
			Egress:       []string{"generativelanguage.googleapis.com"},
			StateDir:     ".gemini",
			Instructions: "GEMINI.md", // ~/.gemini/GEMINI.md, Gemini CLI's global context
			Env:          map[string]string{GeminiTrustVar: "true"},
		},
		"shell": {
			Name:    "shell",
			Builtin: true,
			Command: []string{"bash", "-l"},
		},
	}
})

// Builtins lists the built-in agent names.
func Builtins() []string {
	var out []string
	for n := range builtins() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrUnknown is returned for a name that is neither built in nor defined.
var ErrUnknown = errors.New("unknown agent")

// Find returns the agent called name: a built-in, or one of defs (the
// effective config's [agents] tables).
func Find(defs map[string]Def, name string) (Agent, error) {
	if a, ok := builtins()[name]; ok {
		return a, nil
	}
	if d, ok := defs[name]; ok {
		return FromDef(name, d), nil
	}
	return Agent{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(defs), ", "))
}

// Names lists the built-in and defined agents, sorted.
func Names(defs map[string]Def) []string {
	out := Builtins()
	for n := range defs {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// All returns every agent, sorted by name.
func All(defs map[string]Def) []Agent {
	var out []Agent
	for _, n := range Names(defs) {
		a, _ := Find(defs, n)
		out = append(out, a)
	}
	return out
}

// GeminiTrustVar is Gemini CLI's folder-trust override: "true" trusts the
// working directory for the process, ahead of its trustedFolders.json and
// its folderTrust setting (Gemini CLI's --skip-trust sets the same
// variable). corral sets it for every gemini session, for the reason
// trustProject marks the folder trusted for Claude Code: the box is the
// trust boundary. Folder trust keeps a repository's .gemini/settings.json,
// .env, commands and MCP servers from running code on the machine Gemini
// CLI runs on; in a box that machine is the box, where the agent already
// runs the repository's code with approvals off (--yolo), and the project
// is its only host mount. Left untrusted, interactive sessions stop at the
// trust dialog, headless ones (gemini -p) exit with "not running in a
// trusted directory", and --yolo is downgraded. A user who wants the
// prompt back sets env = { GEMINI_CLI_TRUST_WORKSPACE = "false" }.
const GeminiTrustVar = "GEMINI_CLI_TRUST_WORKSPACE"

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

// placeholderKeySuffix is how Claude Code remembers that the user approved
// a custom API key (the key's last 20 characters, under
// customApiKeyResponses.approved in .claude.json): the last 20 of the
// placeholder a brokered session gets as ANTHROPIC_API_KEY
// (core/credential Placeholder). Without it an interactive session first
// asks "Detected a custom API key in your environment. Do you want to use
// this API key?" with No preselected (seen in e2e claudeDetached).
const placeholderKeySuffix = "brokered-placeholder"
