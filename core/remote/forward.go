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
	// the project's): they run on the chosen host in a project directory
	// there, -C's path on the host, or else the clone of this machine's
	// project that is sent there first (docs/REMOTE.md).
	ScopeProject
	// ScopeBoth commands need this machine and the host together: pull
	// brings a box's commits from the host into this machine's repository.
	// They run here and talk to the host's corral themselves.
	ScopeBoth
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
	"allow": ScopeProject, "deny": ScopeProject, "approve": ScopeProject, "egress": ScopeProject, "review": ScopeProject,
	"snapshot": ScopeProject, "render": ScopeProject, "config": ScopeProject,
	// The host as a whole.
	"ls": ScopeHost, "sessions": ScopeHost, "golden": ScopeHost, "doctor": ScopeHost,
	"gc": ScopeHost, "audit": ScopeHost, "version": ScopeHost,
	// Needs both sides.
	"pull": ScopeBoth,
	// This machine's own: hosts, keychain, menu, shell completion, and the
	// program modes corral starts beside its boxes.
	"host": ScopeLocal, "secret": ScopeLocal, "app": ScopeLocal, "completion": ScopeLocal,
	"help": ScopeLocal, "broker": ScopeLocal, "guest-conn": ScopeLocal, "host-conn": ScopeLocal,
	// The host's end of a transfer: another machine's corral runs it over
	// ssh with --host local.
	"project": ScopeLocal,
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

// NeedsDir is the error of a ScopeProject command forwarded without -C
// from a directory that is no git repository (why says so): there is no
// project to send.
func NeedsDir(command, host, why string) error {
	return hint.New(fmt.Errorf("corral %s on host %s needs -C with the project's path there, or a git repository here to send: %s", command, host, why),
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
