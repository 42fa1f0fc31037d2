package remote

import (
	"fmt"
	"slices"
	"strings"

	"github.com/corral-dev/corral/core/hint"
)

// Scope says where a top-level command runs when a host is chosen
// (--host NAME, or the project's host key).
type Scope int

const (
	// ScopeLocal commands always run on this machine: they manage this
	// machine's own state (hosts, keychain, the menu) or are program modes
	// corral starts on the machine of the box.
	ScopeLocal Scope = iota
	// ScopeRemote commands act on boxes, goldens and their state, which
	// live where the box runs: they run on the chosen host.
	ScopeRemote
	// ScopeNotYet commands would need this machine and the host together
	// (pull brings the box's commits into the laptop's repository); they
	// refuse a host until that part is built.
	ScopeNotYet
)

// scopes is the one list of which command runs where. A top-level command
// missing from it is local; TestScopesCoverTheTree keeps it complete.
var scopes = map[string]Scope{
	// Boxes: lifecycle, sessions, state.
	"up": ScopeRemote, "start": ScopeRemote, "stop": ScopeRemote, "rm": ScopeRemote,
	"ls": ScopeRemote, "info": ScopeRemote, "rebuild": ScopeRemote,
	"run": ScopeRemote, "shell": ScopeRemote, "claude": ScopeRemote, "codex": ScopeRemote,
	"gemini": ScopeRemote, "agent": ScopeRemote, "agents": ScopeRemote,
	"port": ScopeRemote, "attach": ScopeRemote, "sessions": ScopeRemote,
	// Egress and approvals: the broker and the trusted layer of the box are there.
	"allow": ScopeRemote, "deny": ScopeRemote, "approve": ScopeRemote, "egress": ScopeRemote,
	// The host's own images, checks, logs and config.
	"golden": ScopeRemote, "snapshot": ScopeRemote, "render": ScopeRemote, "doctor": ScopeRemote,
	"gc": ScopeRemote, "audit": ScopeRemote, "config": ScopeRemote, "version": ScopeRemote,
	// Needs both sides.
	"pull": ScopeNotYet,
	// This machine's own: hosts, keychain, menu, shell completion, and the
	// program modes corral starts beside its boxes.
	"host": ScopeLocal, "secret": ScopeLocal, "app": ScopeLocal, "completion": ScopeLocal,
	"help": ScopeLocal, "broker": ScopeLocal, "guest-conn": ScopeLocal, "host-conn": ScopeLocal,
}

// ScopeOf is where the top-level command name runs when a host is chosen.
func ScopeOf(name string) Scope { return scopes[name] }

// Commands lists the top-level commands of a scope, sorted (for docs and
// tests).
func Commands(s Scope) []string {
	var out []string
	for n, sc := range scopes {
		if sc == s {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// NotYet is the error of a ScopeNotYet command given a host.
func NotYet(command, host string) error {
	return hint.New(fmt.Errorf("corral %s does not run on a remote host yet (host %s)", command, host),
		"run it there over ssh for now; see docs/REMOTE.md, next steps")
}

// StripHostFlag returns args without the --host flag and its value
// (--host NAME, --host=NAME), up to the "--" that ends the flags; what
// follows "--" is the command's own and is kept as it is.
func StripHostFlag(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...)
		case a == "--host":
			i++ // and its value
		case strings.HasPrefix(a, "--host="):
		default:
			out = append(out, a)
		}
	}
	return out
}
