package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/app/picker"
	"github.com/corral-dev/corral/app/tray"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/recent"
)

// rebuildConfirmWindow is how long "Click again to rebuild" stays armed.
const rebuildConfirmWindow = 15 * time.Second

type loop struct {
	opts   Options
	log    *slog.Logger
	b      Backend
	cancel context.CancelFunc
	cool   *notify.Cooldown

	clicks  chan tray.Click
	results chan func(context.Context)
	// opened receives when the menu opens (menuOpened; never blocks the
	// tray, which drops an opening nobody receives).
	opened chan struct{}

	mu      sync.Mutex // guards started, stopped and workers.Add
	started bool
	stopped bool
	workers sync.WaitGroup
	// quitting is set before systray is asked to quit. From then on the
	// loop touches systray no more: its setters wait for the main thread,
	// which stops serving them once Quit has run (a render then would hang
	// the loop, and Run waiting for it).
	quitting atomic.Bool

	// Owned by the run goroutine.
	tray         *tray.Tray
	state        menu.State
	ui           menu.UI
	confirmUntil time.Time
	refreshing   bool
	refreshAgain bool
	sweeping     bool // a timer's StopIdle runs
	picking      bool // the folder chooser is open
	readingLogin bool // a read of the login item's state is under way

	// Remote hosts, owned by the run goroutine like the rest: the last
	// read of each host (in hosts.toml order), why the list could not be
	// read, which hosts a read is under way for (and which need one more
	// after it), and each host's read schedule (readSchedule).
	remote        []menu.RemoteHost
	remoteErr     string
	listingHosts  bool
	remoteReading map[string]bool
	remoteAgain   map[string]bool
	remoteSched   readSchedule
	remoteReads   map[string]hostReads
}

func newLoop(opts Options, cancel context.CancelFunc) *loop {
	if opts.Login == nil {
		opts.Login = noLogin{}
	}
	return &loop{
		opts: opts, log: opts.Logger, b: opts.Backend, cancel: cancel,
		cool:          &notify.Cooldown{Period: opts.NotifyCooldown},
		clicks:        make(chan tray.Click, 64),
		results:       make(chan func(context.Context), 64),
		opened:        make(chan struct{}, 1),
		ui:            menu.UI{Busy: map[string]string{}},
		remoteReading: map[string]bool{},
		remoteAgain:   map[string]bool{},
		remoteSched:   defaultSchedule(opts.RemoteInterval),
		remoteReads:   map[string]hostReads{},
	}
}

// start begins the loop and the denial watcher; called once systray is
// ready. It returns at once (systray's onReady must not block).
func (l *loop) start(ctx context.Context) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.started || l.stopped || ctx.Err() != nil {
		return
	}
	l.started = true
	l.tray = tray.New(l.clicks)
	if st, err := l.opts.Login.State(); err == nil {
		l.ui.Login = st
	}
	l.render() // empty menu right away; the first snapshot follows
	l.workers.Add(2)
	go func() { defer l.workers.Done(); l.run(ctx) }()
	go func() { defer l.workers.Done(); l.watchDenials(ctx) }()
}

// wait waits for the loop and the watcher to return after ctx is done.
func (l *loop) wait() { l.waitFor(0) }

// waitFor is wait bounded by d (0: unbounded); it reports whether they
// returned.
func (l *loop) waitFor(d time.Duration) bool {
	l.mu.Lock()
	l.stopped = true
	l.mu.Unlock()
	done := make(chan struct{})
	go func() { l.workers.Wait(); close(done) }()
	if d <= 0 {
		<-done
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func (l *loop) run(ctx context.Context) {
	tick := time.NewTicker(l.opts.RefreshInterval)
	defer tick.Stop()
	sweep := time.NewTicker(l.opts.SweepInterval)
	defer sweep.Stop()
	var remoteTick <-chan time.Time
	if l.opts.Remote != nil && l.opts.RemoteInterval > 0 {
		t := time.NewTicker(l.opts.RemoteInterval)
		defer t.Stop()
		remoteTick = t.C
	}
	l.refresh(ctx)
	l.refreshRemote(ctx, false)
	actions := l.opts.Notifier.Actions()
	// A notifier that learns later it will not be shown (macOS refused
	// authorization) says so once, on the menu's error line.
	var trouble <-chan string
	if t, ok := l.opts.Notifier.(notify.Troubled); ok {
		trouble = t.Trouble()
	}
	for {
		// Quit first: when Quit and other events are ready together,
		// select would pick at random and might render after Quit.
		if ctx.Err() != nil || l.quitting.Load() {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			l.refresh(ctx)
		case <-sweep.C:
			l.stopIdle(ctx, false)
		case <-remoteTick:
			l.refreshRemote(ctx, false)
		case <-l.opened:
			l.onMenuOpened(ctx)
		case c := <-l.clicks:
			l.click(ctx, c)
		case f := <-l.results:
			f(ctx)
		case msg := <-trouble:
			trouble = nil // once
			l.ui.LastError = msg
			l.render()
		case a, ok := <-actions:
			if !ok {
				actions = nil
				continue
			}
			l.notificationAction(ctx, a)
		}
	}
}

// goDo runs work off the loop and then done (if any) on the loop.
func (l *loop) goDo(ctx context.Context, work func(context.Context) func()) {
	go func() {
		done := work(ctx)
		if done == nil {
			return
		}
		select {
		case l.results <- func(context.Context) { done() }:
		case <-ctx.Done():
		}
	}()
}

func (l *loop) refresh(ctx context.Context) {
	if l.refreshing {
		l.refreshAgain = true
		return
	}
	l.refreshing = true
	l.goDo(ctx, func(ctx context.Context) func() {
		st, err := l.b.Snapshot(ctx)
		return func() {
			l.refreshing = false
			if err != nil {
				if l.ui.SnapshotErr == "" {
					l.log.Error("reading box state", "err", err)
				}
				l.ui.SnapshotErr = err.Error()
			} else {
				l.ui.SnapshotErr = ""
				l.state = st
			}
			l.render()
			if l.refreshAgain {
				l.refreshAgain = false
				l.refresh(ctx)
			}
		}
	})
}

func (l *loop) render() {
	if l.quitting.Load() {
		return
	}
	now := time.Now()
	if l.ui.ConfirmRebuild != "" && now.After(l.confirmUntil) {
		l.ui.ConfirmRebuild = ""
	}
	l.ui.Now = now
	st := l.state
	st.Remote, st.RemoteErr = l.remote, l.remoteErr
	l.tray.Apply(menu.Build(st, l.ui, l.opts.Limits))
}

func (l *loop) fail(op string, err error) {
	l.log.Error(op, "err", err)
	l.ui.LastError = errorText(op, err)
}

// click handles one menu click on the loop.
func (l *loop) click(ctx context.Context, c tray.Click) {
	a := c.Action
	l.log.Debug("menu click", "key", c.Key)
	if a.Remote != "" {
		l.remoteClick(ctx, a)
		return
	}
	switch a.Kind {
	case menu.ActQuit:
		// runTray's watcher asks systray to quit once ctx is done; the
		// loop itself never waits on the main thread for it.
		l.quitting.Store(true)
		l.cancel()
	case menu.ActToggleLogin:
		l.toggleLogin(ctx)
	case menu.ActDismissError:
		l.ui.LastError = ""
		l.render()
	case menu.ActArmRebuild:
		l.ui.ConfirmRebuild = a.Box
		l.confirmUntil = time.Now().Add(rebuildConfirmWindow)
		l.render()
		time.AfterFunc(rebuildConfirmWindow+100*time.Millisecond, func() {
			select {
			case l.results <- func(context.Context) { l.render() }:
			case <-ctx.Done():
			}
		})
	case menu.ActRebuild:
		l.ui.ConfirmRebuild = ""
		l.boxOp(ctx, a.Box, "Rebuilding", "rebuild", l.b.Rebuild)
	case menu.ActStart:
		l.boxOp(ctx, a.Box, "Starting", "start", l.b.Start)
	case menu.ActStop:
		l.boxOp(ctx, a.Box, "Stopping", "stop", l.b.Stop)
	case menu.ActPull:
		l.boxOp(ctx, a.Box, "Pulling", "pull", l.b.Pull)
	case menu.ActAllow:
		l.allow(ctx, a.Box, a.Host, a.Scope)
	case menu.ActDenyRequest:
		l.deny(ctx, a.Box, a.Host)
	case menu.ActStopIdle:
		l.stopIdle(ctx, true)
	case menu.ActOpenSession, menu.ActOpenShell, menu.ActOpenProject, menu.ActReviewRequests, menu.ActAttach:
		l.openTerminal(ctx, a)
	case menu.ActOpenFolder:
		l.pickFolder(ctx)
	case menu.ActShowLog:
		l.open(ctx, "show egress log of "+a.Box, l.b.EgressLogPath(a.Box))
	case menu.ActReviewSession:
		l.review(ctx, a.Box)
	case menu.ActRevealProject:
		l.open(ctx, "reveal project "+a.Project, a.Project)
	case menu.ActOpenPort:
		// The URL is made of an integer the menu checked (1-65535): no
		// box-written text reaches the opener's argv.
		l.open(ctx, fmt.Sprintf("open localhost:%d", a.Port), fmt.Sprintf("http://localhost:%d/", a.Port))
	case menu.ActOpenConfig:
		path := l.b.ConfigPath()
		l.goDo(ctx, func(ctx context.Context) func() {
			err := ensureConfigFile(path)
			if err == nil {
				err = l.opts.Opener.Open(ctx, path)
			}
			if err != nil {
				return func() { l.fail("open config", err); l.render() }
			}
			return nil
		})
	}
}

// review runs `corral review BOX --open` off the loop: the same report as
// the CLI's, as a page in the browser. The box name passes its rule first.
func (l *loop) review(ctx context.Context, box string) {
	argv, err := ReviewArgv(l.opts.CorralPath, box)
	if err != nil {
		l.fail("review "+box, err)
		l.render()
		return
	}
	l.goDo(ctx, func(ctx context.Context) func() {
		out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(out)))
			return func() { l.fail("review "+box, err); l.render() }
		}
		return nil
	})
}

// toggleLogin turns "Open at login" on or off off the loop (registering
// may take a moment and macOS may show its own notice), then shows the
// state macOS reports.
func (l *loop) toggleLogin(ctx context.Context) {
	want := wantLogin(l.ui.Login)
	l.goDo(ctx, func(context.Context) func() {
		err := l.opts.Login.SetEnabled(want)
		st, serr := l.opts.Login.State()
		return func() {
			if err := loginOutcome(want, err, st, serr); err != nil {
				l.fail("open at login", err)
			}
			if serr == nil {
				l.ui.Login = st
			}
			l.render()
		}
	})
}

// onMenuOpened reads again what may have changed outside corral while
// the menu was closed: the login item (System Settings) and the remote
// hosts read long enough ago.
func (l *loop) onMenuOpened(ctx context.Context) {
	l.refreshLogin(ctx)
	l.refreshRemote(ctx, true)
}

// refreshLogin reads the login item's state again off the loop (the user
// may have changed it in System Settings since) and redraws when it
// changed. One read at a time.
func (l *loop) refreshLogin(ctx context.Context) {
	if l.readingLogin {
		return
	}
	l.readingLogin = true
	l.goDo(ctx, func(context.Context) func() {
		st, err := l.opts.Login.State()
		return func() {
			l.readingLogin = false
			if err == nil && st != l.ui.Login {
				l.ui.Login = st
				l.render()
			}
		}
	})
}

// openTerminal opens the action's command (CommandArgv) in a terminal, off
// the loop. A project folder is checked again first: a folder found under
// a project root may have been swapped for a symlink since the scan.
func (l *loop) openTerminal(ctx context.Context, a menu.Action) {
	argv, err := CommandArgv(l.opts.CorralPath, a)
	if err != nil {
		l.fail("open terminal", err)
		l.render()
		return
	}
	op := "open terminal for " + strings.Join(argv[1:], " ")
	l.goDo(ctx, func(ctx context.Context) func() {
		// A remote box's folder is on its host: nothing here to check.
		if a.Project != "" && a.Remote == "" {
			if err := recent.CheckDir(a.Project); err != nil {
				return func() { l.fail(op, err); l.render() }
			}
		}
		if err := l.opts.Launcher.Open(ctx, argv); err != nil {
			return func() { l.fail(op, err); l.render() }
		}
		return nil
	})
}

// pickFolder shows the folder chooser off the loop (it waits on the user)
// and opens a Claude session in the folder chosen. One chooser at a time.
// With no chooser at all, a notification says how to do it by hand.
func (l *loop) pickFolder(ctx context.Context) {
	if l.picking {
		return
	}
	l.picking = true
	l.goDo(ctx, func(ctx context.Context) func() {
		dir, err := l.opts.Picker.Pick(ctx)
		if err == nil {
			dir, err = project.ResolveDir(dir)
		}
		if errors.Is(err, picker.ErrUnavailable) {
			n := notify.Notification{Kind: notify.KindInfo, Title: "corral cannot show a folder chooser",
				Body: "Open a project from a terminal with corral claude -C DIR, or list your projects' parent folder in project_roots in ~/.corral/config.toml."}
			if nerr := l.opts.Notifier.Notify(ctx, n); nerr != nil {
				l.log.Warn("posting notification", "err", nerr)
			}
		}
		return func() {
			l.picking = false
			switch {
			case errors.Is(err, picker.ErrCancelled), errors.Is(err, context.Canceled):
			case err != nil:
				l.fail("open folder", err)
				l.render()
			default:
				l.openTerminal(ctx, menu.Action{Kind: menu.ActOpenProject, Project: dir})
			}
		}
	})
}

// stopIdle stops the idle boxes off the loop: for a click (which shows a
// failure in the menu) or on the sweep timer (which only logs it; the next
// tick retries).
func (l *loop) stopIdle(ctx context.Context, clicked bool) {
	if !clicked {
		if l.sweeping {
			return
		}
		l.sweeping = true
	}
	l.goDo(ctx, func(ctx context.Context) func() {
		// Off the loop: the guard reads and rewrites files, and posting
		// is a D-Bus (or main-queue) round trip.
		for _, r := range l.b.GuardGit(ctx) {
			l.notifyGitRevert(ctx, r)
		}
		names, err := l.b.StopIdle(ctx)
		return func() {
			if !clicked {
				l.sweeping = false
			}
			switch {
			case err != nil && clicked:
				l.fail("stop idle boxes", err)
			case err != nil:
				l.log.Warn("stopping idle boxes", "err", err)
			case len(names) > 0 || clicked:
				l.log.Info("stopped idle boxes", "boxes", names)
			}
			if len(names) > 0 || clicked {
				l.refresh(ctx)
			}
		}
	})
}

func (l *loop) open(ctx context.Context, op, path string) {
	l.goDo(ctx, func(ctx context.Context) func() {
		if err := l.opts.Opener.Open(ctx, path); err != nil {
			return func() { l.fail(op, err); l.render() }
		}
		return nil
	})
}

// boxOp runs a slow lifecycle call with the box marked busy meanwhile.
func (l *loop) boxOp(ctx context.Context, box, verb, name string, f func(context.Context, string) error) {
	if _, busy := l.ui.Busy[box]; busy {
		return
	}
	l.ui.Busy[box] = verb
	l.render()
	l.goDo(ctx, func(ctx context.Context) func() {
		err := f(ctx, box)
		return func() {
			delete(l.ui.Busy, box)
			if err != nil {
				l.fail(fmt.Sprintf("%s %s", name, box), err)
			}
			l.render()
			l.refresh(ctx)
		}
	})
}

func (l *loop) allow(ctx context.Context, box, host string, scope menu.AllowScope) {
	l.goDo(ctx, func(ctx context.Context) func() {
		err := l.b.Allow(ctx, box, host, scope)
		return func() {
			if err != nil {
				l.fail(fmt.Sprintf("allow %s for %s", host, box), err)
			} else {
				l.log.Info("allowed host", "box", box, "host", host, "scope", scope.String())
				l.cool.Reset(box, host)
				l.forgetDenied(box, host, scope)
				l.forgetAsked(box, host)
			}
			l.render()
			l.refresh(ctx)
		}
	})
}

// forgetDenied drops the allowed host from the shown denials until the
// next snapshot says otherwise, so the menu reacts at once.
func (l *loop) forgetDenied(box, host string, scope menu.AllowScope) {
	for i := range l.state.Boxes {
		b := &l.state.Boxes[i]
		if b.Name != box {
			continue
		}
		kept := b.Denied[:0:0]
		for _, d := range b.Denied {
			covered := d.Host == host || (scope == menu.AllowDomain && strings.HasSuffix(d.Host, "."+host))
			if !covered {
				kept = append(kept, d)
			}
		}
		b.Denied = kept
	}
}

func (l *loop) notificationAction(ctx context.Context, a notify.ActionEvent) {
	switch a.Action {
	case notify.ActionAllow:
		l.allow(ctx, a.Box, a.Host, menu.AllowAlways)
	case notify.ActionAllowOnce:
		l.allow(ctx, a.Box, a.Host, menu.AllowOnce)
	}
}

// denied records a denial on the loop: merge it into the state, redraw,
// notify (rate-limited per box and host) and refresh.
func (l *loop) denied(ctx context.Context, box string, d menu.DeniedHost) {
	if d.Asked != nil {
		l.asked(ctx, box, *d.Asked)
		return
	}
	for i := range l.state.Boxes {
		b := &l.state.Boxes[i]
		if b.Name != box {
			continue
		}
		found := false
		for j := range b.Denied {
			if b.Denied[j].Host == d.Host && b.Denied[j].Port == d.Port {
				b.Denied[j] = d
				found = true
			}
		}
		if !found {
			b.Denied = append(append([]menu.DeniedHost(nil), b.Denied...), d)
		}
	}
	l.render()
	// A request that did not parse gets no notification: every notification
	// offers Allow, and raw request text is nothing to allow (the menu
	// still lists it). Shown text goes through core/display.
	if menu.Allowable(d) && l.cool.Allow(box, d.Host) {
		n := denialNotification(box, d)
		l.goDo(ctx, func(ctx context.Context) func() {
			if err := l.opts.Notifier.Notify(ctx, n); err != nil {
				l.log.Warn("posting notification", "err", err)
			}
			return nil
		})
	}
	l.refresh(ctx)
}

// denialNotification is the notification of a denial: "web was blocked
// from localhost (this machine)", with Allow for what was denied. A host
// that names this computer is marked, with what allowing it means.
func denialNotification(box string, d menu.DeniedHost) notify.Notification {
	host := display.Host(d.Host, 0)
	who := "The box " + display.Text(box, 0)
	if d.Who != "" {
		// The client's own word about itself: shown, never decided on.
		who = display.Text(d.Who, 80) + " in the box " + display.Text(box, 0)
	}
	n := notify.Notification{
		Box: box, Host: egress.EntryFor(d.Host, d.Port), // what its Allow grants
		Title: fmt.Sprintf("%s was blocked from %s", display.Text(box, 0), host),
		Body:  fmt.Sprintf("%s tried to reach %s (port %d). Allow it?", who, host, d.Port),
	}
	if egress.ThisMachine(d.Host) {
		n.Title += " (" + egress.ThisMachineMark + ")"
		n.Body = fmt.Sprintf("%s tried to reach %s (port %d). %s Allow it?", who, host, d.Port, egress.ThisMachineNotice)
	}
	return n
}

// notifyGitRevert posts one informational notification (no actions) for a
// git guard event. It runs off the loop. Every shown string is box-derived
// (box name, project path, changed paths) and goes through core/display.
func (l *loop) notifyGitRevert(ctx context.Context, r GitRevert) {
	l.log.Warn("git guard reverted a change", "box", r.Box, "project", r.Project, "changes", r.Changes, "err", r.Err)
	n := notify.Notification{Kind: notify.KindInfo, Box: r.Box}
	n.Title, n.Body = gitRevertText(r)
	if err := l.opts.Notifier.Notify(ctx, n); err != nil {
		l.log.Warn("posting git guard notification", "err", err)
	}
}

// maxRevertLines caps the changes a notification lists; the audit log has
// them all.
const maxRevertLines = 3

// gitRevertText is the title and body of a git guard notification.
func gitRevertText(r GitRevert) (title, body string) {
	gitDir := display.Text(filepath.Join(r.Project, ".git"), 0)
	boxName := display.Text(r.Box, 0)
	if len(r.Appeared) > 0 {
		what := make([]string, 0, maxRevertLines+1)
		for i, p := range r.Appeared {
			if i == maxRevertLines {
				what = append(what, fmt.Sprintf("and %d more (corral ls)", len(r.Appeared)-i))
				break
			}
			what = append(what, display.Text(p, 0))
		}
		return "A repository appeared in box " + boxName + "'s project",
			fmt.Sprintf("%s. Git run there (your editor's too) would use its config: remove it if you did not make it.", strings.Join(what, "; "))
	}
	what := make([]string, 0, maxRevertLines+1)
	for i, c := range r.Changes {
		if i == maxRevertLines {
			what = append(what, fmt.Sprintf("and %d more (corral audit)", len(r.Changes)-i))
			break
		}
		what = append(what, display.Text(c, 0))
	}
	list := strings.Join(what, "; ")
	if r.Err != nil {
		return "corral could not revert a change to " + gitDir,
			fmt.Sprintf("Box %s could write %s and changed it: %s. Reverting failed: %s. Do not run git there; run corral doctor.",
				boxName, gitDir, list, display.Text(r.Err.Error(), 0))
	}
	return "corral reverted a change to " + gitDir,
		fmt.Sprintf("corral reverted a change to %s made while box %s could write it: %s", gitDir, boxName, list)
}

// watchDenials runs Backend.WatchDenials until ctx is done, restarting it
// after errors.
func (l *loop) watchDenials(ctx context.Context) {
	for {
		err := l.b.WatchDenials(ctx, func(box string, d menu.DeniedHost) {
			select {
			case l.results <- func(ctx context.Context) { l.denied(ctx, box, d) }:
			case <-ctx.Done():
			}
		})
		if ctx.Err() != nil {
			return
		}
		l.log.Warn("watching egress denials stopped; retrying in 5s", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}
