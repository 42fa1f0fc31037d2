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
	// ScopeHost commands act on the host as a whole (its boxes, images,
	// logs, checks, version): they run on the chosen host as given.
	ScopeHost
	// ScopeProject commands act on a project's box (the one named, else
	// the project's): they run on the chosen host, and need -C there,
	// since the project is not copied to the host yet (docs/REMOTE.md):
	// without it the remote corral would take the remote user's home
	// directory for the project.
	ScopeProject
	// ScopeNotYet commands would need this machine and the host together
	// (pull brings the box's commits into the laptop's repository); they
	// refuse a host until that part is built.
	ScopeNotYet
)

// scopes is the one list of which command runs where. A top-level command
// missing from it is local; TestScopesCoverTheTree keeps it complete.
var scopes = map[string]Scope{
	// A project's box: lifecycle, sessions, egress and approvals (the
	// broker and the box's trusted layer are on the host).
	"up": ScopeProject, "start": ScopeProject, "stop": ScopeProject, "rm": ScopeProject,
	"info": ScopeProject, "rebuild": ScopeProject, "run": ScopeProject, "shell": ScopeProject,
	"claude": ScopeProject, "codex": ScopeProject, "gemini": ScopeProject, "agent": ScopeProject,
	"agents": ScopeProject, "port": ScopeProject, "attach": ScopeProject,
	"allow": ScopeProject, "deny": ScopeProject, "approve": ScopeProject, "egress": ScopeProject,
	"snapshot": ScopeProject, "render": ScopeProject, "config": ScopeProject,
	// The host as a whole.
	"ls": ScopeHost, "sessions": ScopeHost, "golden": ScopeHost, "doctor": ScopeHost,
	"gc": ScopeHost, "audit": ScopeHost, "version": ScopeHost,
	// Needs both sides.
	"pull": ScopeNotYet,
	// This machine's own: hosts, keychain, menu, shell completion, and the
	// program modes corral starts beside its boxes.
	"host": ScopeLocal, "secret": ScopeLocal, "app": ScopeLocal, "completion": ScopeLocal,
	"help": ScopeLocal, "broker": ScopeLocal, "guest-conn": ScopeLocal, "host-conn": ScopeLocal,
}

// sessions are the commands that open a session in a box: forwarded to a
// host, they carry this machine's credential relay (relay.go). attach
// joins a session that already has its environment.
var sessions = map[string]bool{"claude": true, "codex": true, "gemini": true, "agent": true, "run": true, "shell": true}

// OpensSession reports whether the top-level command name opens a session
// in a box.
func OpensSession(name string) bool { return sessions[name] }

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

// NeedsDir is the error of a ScopeProject command forwarded without -C.
func NeedsDir(command, host string) error {
	return hint.New(fmt.Errorf("corral %s on host %s needs -C with the project's path there: the project is not copied to remote hosts yet", command, host),
		fmt.Sprintf("corral --host %s -C /PATH/ON/%s %s ... (see docs/REMOTE.md)", host, strings.ToUpper(host), command))
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
