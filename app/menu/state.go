// Package menu derives the menu-bar app's menu from a snapshot of box state.
//
// Everything here is pure: Build turns a State (what the lifecycle service
// reports) and a UI value (what only the app knows, such as the last error)
// into a tree of Items with stable keys and an Action per clickable item. The
// tray glue (package tray) renders that tree and routes clicks back by Action;
// the tests compare trees without any D-Bus or AppKit.
package menu

import (
	"time"

	"github.com/corral-dev/corral/core/boxstate"
)

// State is one snapshot of everything the menu shows.
type State struct {
	Boxes []BoxView
	// Projects are recently used projects (those with a box, and the
	// folders corral used lately), in any order: Build sorts them by
	// LastUsed.
	Projects []Project
	// Repos are the repositories found under the project_roots of the host
	// config, newest first; Build lists those not already in Projects.
	Repos []Project
	// Roots are the configured project_roots as written (e.g. "~/src"),
	// for the label above Repos.
	Roots []string

	// Remote are the remote hosts (corral host add), any order: Build
	// lists each under its own header after the local boxes.
	Remote []RemoteHost
	// RemoteErr is why the list of remote hosts could not be read
	// (~/.corral/hosts.toml); "" when it was.
	RemoteErr string
}

// RemoteHost is one remote host and its boxes, as the app last read them
// over ssh (core/remotebox). Everything in it but Name and URL came from
// the host and is shown through core/display.
type RemoteHost struct {
	Name string // the host's name in hosts.toml (the host name rule)
	URL  string // ssh://[user@]host[:port]
	// Boxes are the host's boxes, each with Host set to Name; nil when
	// the host could not be read.
	Boxes []BoxView
	// Err is why the host could not be read, one line ("" when it was):
	// the menu shows the host as unreachable, saying why.
	Err string
	// Reading is set until the first read of the host ends: nothing is
	// known yet.
	Reading bool
	// At is when the last read ended.
	At time.Time
}

// BusyKey is the key of UI.Busy for box on host ("" for this machine): a
// remote box may have the name of a local one. Neither a box name nor a
// host name holds '/'.
func BusyKey(host, box string) string {
	if host == "" {
		return box
	}
	return host + "/" + box
}

// BoxView is one box (Lima instance) as the menu shows it.
type BoxView struct {
	Name string // instance name, e.g. "web-3f2a1c"
	// Host is the remote host the box runs on (corral --host); "" for
	// this machine. A remote box's Project is a path on that host.
	Host    string
	Project string         // project directory on the host; "" when unknown
	State   boxstate.State // the box's state in core's machine (box.Status.Shown)

	MemBytes    uint64 // current host memory charged to the VM; 0 when stopped or unknown
	PeakBytes   uint64 // lifetime peak; informational (tooltip)
	MemCapBytes uint64 // configured VM memory; 0 when unknown

	Idle     time.Duration // time since the last activity; 0 when busy or unknown
	Sessions int           // open agent/shell sessions
	IdleStop time.Duration // configured idle auto-stop; 0 = never
	// IdleDue is the lifecycle service's idle rule (core/box IsIdle): the
	// box is due to be stopped, and "Stop idle boxes" stops it.
	IdleDue bool
	// SavedLowMemory says a Saved box was saved by the low-memory rule
	// (save_when_free_below: the host ran short of memory), at SavedAt.
	SavedLowMemory bool
	SavedAt        time.Time

	// NewCommits are commits on the box's branches the host has not
	// pulled yet (corral pull); 0 when none or unknown.
	NewCommits int

	// NoPermanentAllow, when set, is why the organisation's managed
	// policy refuses a permanent approval (max_approval): the menu shows
	// "Allow always" and "Allow *.domain" disabled, saying so.
	NoPermanentAllow string
	// LearningUntil is when the box's learning window ends, while its
	// broker learns (`corral up --learn`); zero otherwise.
	LearningUntil time.Time

	// Requests are hosts the box's repository requests (egress in its
	// .corral.toml) that nobody approved yet; 0 when none or unknown.
	Requests int
	// Refused are the entries the box's repository requests that the grant
	// check refuses: a verdict, never offered for approval; 0 when none or
	// unknown.
	Refused int

	// Detached are the box's detachable sessions (tmux in the box), as of
	// the last time the app asked the box; nil when not running or unknown.
	Detached []SessionView

	// Ports are the host ports (on 127.0.0.1) the box forwards to its own
	// ports (the ports key, corral port), in config order.
	Ports []int
	// HostPorts are the host loopback ports the box may reach (host_ports,
	// the IDE bridge), as applied at its last start; HostPortsRoute says
	// where and how it reaches them (core/box HostPortsRoute).
	HostPorts      []int
	HostPortsRoute string

	Denied []DeniedHost // hosts the egress proxy refused, any order
	// DeniedUnknown says why Denied is unknown: a remote box whose
	// denials could not be read; "" otherwise.
	DeniedUnknown string
	// Asked are the requests programs in the box filed (corral-request)
	// that wait for an answer, any order.
	Asked []BoxRequest
	// Credentials are the brokered credentials the box used (the broker's
	// evidence in the audit log), any order.
	Credentials []CredentialUse
	Err         string // last lifecycle error for this box, shown in its submenu
}

// CredentialUse is one brokered credential a box used: how often and when
// last (core/audit CredentialUses). Name is the configured credential
// name; the menu shows it through core/display like any box text.
type CredentialUse struct {
	Name string
	Uses int
	Last time.Time
}

// DeniedHost is one destination the egress proxy refused for a box.
type DeniedHost struct {
	Host  string
	Port  int
	Count int
	Last  time.Time
	// Malformed is set when the request did not parse (the broker's reason
	// was malformed-authority or userinfo): Host is then raw request text,
	// and the menu and notifications offer no Allow for it.
	Malformed bool
	// Asked is set when the line is not a denial but a request the box
	// filed (WatchDenials reports both).
	Asked *BoxRequest
	// Who is what the client said about itself ("session ab12cd"; the
	// box's word, shown through core/display), "" when nothing.
	Who string
}

// BoxRequest is a request a program in the box filed with corral-request:
// a host (or host:port) or a forwarded port, with a reason and the process
// that says it asked. Why and Who are the box's own words: the menu shows
// them through core/display and decides nothing on them.
type BoxRequest struct {
	// Request is the canonical allow-list entry asked for, or "port N".
	Request string
	IsPort  bool
	Why     string
	Who     string // "node (pid 42, npm < bash, session tests)"; "" when unknown
	Time    time.Time
}

// SessionView is a detachable session running in a box. Everything in it
// came from the box: Name passed core/box's session name rule, and the
// menu shows it through core/display like any box text.
//
// Whether the agent in it waits for input is not known: tmux reports when
// the session last had input or output (Activity), and a quiet session may
// be waiting or working without output. The menu shows how long it has
// been quiet, never "waiting".
type SessionView struct {
	Name     string
	Agent    string    // "" when the box did not say
	Attached int       // terminals attached now
	Activity time.Time // last input or output; zero when unknown
}

// Project is a recently used project directory.
type Project struct {
	Dir      string // absolute host path
	Name     string // display name; Build uses the base of Dir when empty
	Box      string // box name, "" when the project has no box yet
	LastUsed time.Time
}

// AllowScope says how long and how wide an allow rule lasts.
type AllowScope int

const (
	// AllowAlways adds host to the box's persistent allow-list.
	AllowAlways AllowScope = iota + 1
	// AllowSession allows host until the box stops.
	AllowSession
	// AllowOnce allows the next connection to host only.
	AllowOnce
	// AllowDomain adds the domain (passed as host, e.g. "example.test")
	// and all its subdomains to the persistent allow-list.
	AllowDomain
	// AllowHour allows host for the next hour (`corral allow --for 1h`).
	AllowHour
)

// HourFor is how long AllowHour lasts.
const HourFor = time.Hour

func (s AllowScope) String() string {
	switch s {
	case AllowAlways:
		return "always"
	case AllowSession:
		return "session"
	case AllowOnce:
		return "once"
	case AllowDomain:
		return "domain"
	case AllowHour:
		return "hour"
	}
	return "unknown"
}

// Running reports whether the box's VM runs (boxstate.State.Up): it counts
// for the header total and offers Stop and sessions.
func (b BoxView) Running() bool { return b.State.Up() }

// IdleCandidate reports whether "Stop idle boxes" would stop b. The menu
// holds no idle rule of its own: it counts what the lifecycle service
// marked due, which is what its StopIdle stops.
func (b BoxView) IdleCandidate() bool { return b.IdleDue }
