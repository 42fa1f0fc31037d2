// Package app is corral's menu-bar app: a thin client over the box
// lifecycle service.
//
// The app holds no lifecycle logic. It reads a State from a Backend every
// few seconds (and on denial events), derives the menu with package menu,
// renders it with package tray (fyne.io/systray), and turns clicks into
// Backend calls, terminal windows (package terminal) and file openers
// (package opener). Denied hosts become desktop notifications (package
// notify) whose "Allow" actions call Backend.Allow.
//
// Remote hosts (corral host add) are read through a RemoteBackend: each
// host on its own goroutine, over one ssh connection per host, when its
// read schedule (readSchedule: every RemoteInterval, less often for a
// host that fails or needs a touch) or the menu's opening says so, its
// result posted back to the loop like any other; a host that is slow or
// unreachable delays nothing but its own line. Actions on a remote box
// run there (corral --host), never here.
//
// Threading: one event loop goroutine owns all app state and is the only
// caller of tray.Apply; it never waits on the Backend. Slow work (Snapshot,
// Start, Stop, Allow, launching terminals) runs on its own goroutine and
// posts its result back to the loop as a function.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/app/opener"
	"github.com/corral-dev/corral/app/picker"
	"github.com/corral-dev/corral/app/terminal"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
)

// The view types come from package menu; these aliases let the lifecycle
// service implement Backend without importing menu.
type (
	State      = menu.State
	BoxView    = menu.BoxView
	DeniedHost = menu.DeniedHost
	// CredentialUse is a brokered credential a box used.
	CredentialUse = menu.CredentialUse
	Project       = menu.Project
	AllowScope    = menu.AllowScope
)

// Allow scopes.
const (
	AllowAlways  = menu.AllowAlways
	AllowSession = menu.AllowSession
	AllowOnce    = menu.AllowOnce
	AllowDomain  = menu.AllowDomain
	AllowHour    = menu.AllowHour
)

// GitRevert is one git guard event: what box could write and changed in
// project's git directory. All of it is box-derived: display it through
// core/display. Err is nil when every change was reverted.
type GitRevert struct {
	Box     string
	Project string
	Changes []string // "modified config", … (relative to Project/.git)
	Err     error
	// Appeared are repository entries the box's broker saw appear in the
	// work tree (core/gitwatch), each reported once: no revert, a warning.
	Appeared []string
}

// Backend is everything the app needs from the lifecycle service.
type Backend interface {
	// Snapshot returns the current boxes and recent projects. It is called
	// every RefreshInterval and must be cheap: read Lima instance dirs and
	// corral state, do not start a limactl process per call.
	Snapshot(ctx context.Context) (State, error)
	Start(ctx context.Context, box string) error
	Stop(ctx context.Context, box string) error
	// StopIdle stops every box the lifecycle service's idle rule says is
	// due (BoxView.IdleDue) and returns their names. The app calls it for
	// "Stop idle boxes" and every SweepInterval.
	StopIdle(ctx context.Context) ([]string, error)
	// GuardGit runs the host git guard (box.Service.GuardGit) and returns
	// one GitRevert per box whose project git directory had changed. The
	// app calls it before every StopIdle and notifies each.
	GuardGit(ctx context.Context) []GitRevert
	// Allow adds host to box's egress allow-list for scope. For AllowDomain,
	// host is the domain (e.g. "example.test") and the rule covers it and
	// all its subdomains.
	Allow(ctx context.Context, box, host string, scope AllowScope) error
	// Deny answers no to a request box filed (corral-request) for request
	// (the entry, or "port N"); a connection held for it is refused.
	Deny(ctx context.Context, box, request string) error
	// Rebuild deletes and recreates box's VM; the app asks for a second
	// click first.
	Rebuild(ctx context.Context, box string) error
	// Pull fetches box's new commits into its project's host repository
	// (corral pull); Snapshot reports their count as BoxView.NewCommits.
	Pull(ctx context.Context, box string) error
	EgressLogPath(box string) string
	ConfigPath() string
	// WatchDenials calls fn for each connection the egress proxy refuses
	// and for each request the box files (DeniedHost.Asked set),
	// until ctx is done, and then returns ctx.Err(). fn does not block for
	// long. The app restarts WatchDenials after an error, after a pause.
	WatchDenials(ctx context.Context, fn func(box string, d DeniedHost)) error
}

// RemoteBackend reads and acts on the boxes of remote hosts (corral host
// add). Every call but RemoteHosts runs ssh: the app makes them off its
// loop, one host per goroutine.
type RemoteBackend interface {
	// RemoteHosts lists the configured hosts, each with Name and URL set
	// (cheap: reads ~/.corral/hosts.toml).
	RemoteHosts(ctx context.Context) ([]menu.RemoteHost, error)
	// ReadHost reads one host's boxes within the host's own deadline. It
	// never fails: a host that cannot be read comes back with Err set.
	ReadHost(ctx context.Context, host string) menu.RemoteHost
	// RemoteStart, RemoteStop and RemoteAllow are corral --host HOST
	// start, stop and allow for box.
	RemoteStart(ctx context.Context, host, box string) error
	RemoteStop(ctx context.Context, host, box string) error
	RemoteAllow(ctx context.Context, host, box, entry string, scope AllowScope) error
}

// Options configure Run. Backend and StateDir are required.
type Options struct {
	Backend Backend
	// Remote reads remote hosts' boxes; nil shows none.
	Remote RemoteBackend
	Logger *slog.Logger // default: discard
	// CorralPath is the corral binary that terminal windows run.
	CorralPath string
	// StateDir holds the single-instance lock (app.lock) and, on macOS,
	// the .command scripts for Terminal.
	StateDir string

	// Overrides, mainly for tests; nil means the platform default.
	Notifier notify.Notifier
	Launcher terminal.Launcher
	Opener   opener.Opener
	// Picker asks for a folder for "Open folder…"; nil means the
	// platform's (NSOpenPanel, the desktop portal).
	Picker picker.Picker
	// Terminal returns the terminal config key at each Open ("" for the
	// platform's default); nil means the default.
	Terminal func() string
	// Login is the "Open at login" switch; nil means the platform's.
	Login LoginItem

	RefreshInterval time.Duration // default 3s
	// RemoteInterval is how often a healthy remote host is read again
	// (over its one shared ssh connection); a host that fails or is slow
	// is read less often (readSchedule), and a healthy one also when the
	// menu opens, at most every remoteOpenAge. Default 30s.
	RemoteInterval time.Duration
	// SweepInterval is how often the app stops idle boxes
	// (Backend.StopIdle), so that idle_stop holds for a user who only runs
	// the app; default 1m.
	SweepInterval  time.Duration
	NotifyCooldown time.Duration // per (box, host); default 10m
	Limits         menu.Limits
	// Icon is a PNG for the tray; default a built-in icon.
	Icon []byte
}

// ErrAlreadyRunning is returned (wrapped, with the PID) by Run when another
// app instance of the same user holds the lock in StateDir.
var ErrAlreadyRunning = errors.New("the corral app is already running")

// CommandArgv is the command a terminal runs for a menu action:
//
//	corral claude -C DIR          (a box's session, a project; the box is
//	                               created on first use)
//	corral shell -C DIR
//	corral approve -C DIR
//	corral attach BOX SESSION
//	corral --host HOST claude -C DIR   (a session in a box on a remote host;
//	                               DIR is the project's path there)
//
// DIR is the project folder the action carries. BOX and SESSION came from
// the box's state and the box itself: they must pass the box and session
// name rules before they reach an argv. A remote host's DIR came from that
// host: it must be absolute and clean (so it cannot be taken for a flag),
// and the host's name must pass the host name rule.
func CommandArgv(corral string, a menu.Action) ([]string, error) {
	if a.Remote != "" {
		if err := remote.CheckName(a.Remote); err != nil {
			return nil, err
		}
		if a.Kind != menu.ActOpenSession {
			return nil, fmt.Errorf("no terminal command for menu action %d on a remote box", a.Kind)
		}
		if a.Project == "" || !strings.HasPrefix(a.Project, "/") || filepath.Clean(a.Project) != a.Project {
			return nil, fmt.Errorf("box %s on host %s has no known project folder", a.Box, a.Remote)
		}
		return []string{corral, "--host", a.Remote, "claude", "-C", a.Project}, nil
	}
	switch a.Kind {
	case menu.ActOpenSession, menu.ActOpenProject, menu.ActOpenShell, menu.ActReviewRequests:
		if a.Project == "" || !filepath.IsAbs(a.Project) {
			return nil, fmt.Errorf("box %s has no known project folder", a.Box)
		}
		cmd := map[menu.ActionKind]string{menu.ActOpenSession: "claude", menu.ActOpenProject: "claude",
			menu.ActOpenShell: "shell", menu.ActReviewRequests: "approve"}[a.Kind]
		return []string{corral, cmd, "-C", a.Project}, nil
	case menu.ActAttach:
		if err := project.CheckName(a.Box, ""); err != nil {
			return nil, err
		}
		if err := box.CheckSessionName(a.Session); err != nil {
			return nil, err
		}
		return []string{corral, "attach", a.Box, a.Session}, nil
	}
	return nil, fmt.Errorf("no terminal command for menu action %d", a.Kind)
}

// ReviewArgv is the command the menu's "Review last session" runs (not in
// a terminal: the report opens in the browser).
func ReviewArgv(corral, box string) ([]string, error) {
	if err := project.CheckName(box, ""); err != nil {
		return nil, err
	}
	return []string{corral, "review", box, "--open"}, nil
}

func (o *Options) fill() error {
	var errs []error
	if o.Backend == nil {
		errs = append(errs, errors.New("app: Options.Backend is nil"))
	}
	if o.StateDir == "" {
		errs = append(errs, errors.New("app: Options.StateDir is empty"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CorralPath == "" {
		o.CorralPath = "corral"
	}
	if o.Launcher == nil {
		o.Launcher = terminal.New(o.StateDir, o.Terminal, o.Logger)
	}
	if o.Login == nil {
		o.Login = newLoginItem()
	}
	if o.Opener == nil {
		o.Opener = opener.New()
	}
	if o.Picker == nil {
		o.Picker = picker.New()
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 3 * time.Second
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = time.Minute
	}
	if o.RemoteInterval <= 0 {
		o.RemoteInterval = 30 * time.Second
	}
	if o.NotifyCooldown <= 0 {
		o.NotifyCooldown = 10 * time.Minute
	}
	if len(o.Icon) == 0 {
		o.Icon = defaultIcon()
	}
	return nil
}

// Run runs the menu-bar app until ctx is done or the user picks Quit. It
// must be called from the main goroutine (systray, like AppKit, needs the
// main thread on macOS), and only once per process. It returns an error
// wrapping ErrAlreadyRunning when another instance runs.
func Run(ctx context.Context, opts Options) error {
	if err := opts.fill(); err != nil {
		return err
	}
	release, err := acquireLock(opts.StateDir)
	if err != nil {
		return err
	}
	defer release()
	if err := preflight(); err != nil {
		return err
	}
	var setupTrouble string
	if opts.Notifier == nil {
		n, err := notify.New(opts.Logger)
		if err != nil {
			opts.Logger.Warn("notifications unavailable; denied hosts show in the menu only", "err", err)
			setupTrouble = notifierSetupText(err)
			n = notify.NewNop()
		}
		opts.Notifier = n
	}
	defer opts.Notifier.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := newLoop(opts, cancel)
	l.ui.LastError = setupTrouble
	runTray(ctx, opts, l)
	// systray.Run has returned: the main thread no longer serves systray's
	// blocking main-thread calls, so a worker caught in one would never
	// return. Wait a little, then leave anyway (see loop.quitting).
	if !l.waitFor(quitWait) {
		opts.Logger.Warn("quitting with the menu loop still busy")
	}
	return nil
}

// quitWait bounds how long Quit waits for the loop's goroutines.
const quitWait = 2 * time.Second

// errorText is the menu's error line: the failed operation, the error and,
// on its own line, the error's hint when it has one.
func errorText(op string, err error) string {
	if h := hint.Of(err); h != "" {
		return fmt.Sprintf("%s: %v\n%s", op, err, h)
	}
	return fmt.Sprintf("%s: %v", op, err)
}
