package app

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/gitwatch"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/recent"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/remotebox"
)

// coreBackend is the app's Backend over core/box: the same lifecycle
// service the CLI uses. Snapshot reads state files only (no limactl).
type coreBackend struct {
	svc *box.Service
	// remote reads and acts on remote hosts' boxes (over ssh, BatchMode).
	remote remotebox.Client

	mu       sync.Mutex
	denied   map[string]deniedCache  // box -> denials summarised from its egress log
	creds    credCache               // every box's credential use, from the audit log
	counts   map[string]commitCount  // box -> commits not pulled yet
	sessions map[string]sessionCache // box -> its detachable sessions
	repos    reposCache              // repositories under project_roots

	// appearedSeen: the repository entries already notified (box, path).
	appearedMu   sync.Mutex
	appearedSeen map[string]bool

	// guestSessions lists a running box's detachable sessions; nil means
	// svc.GuestSessions (an ssh channel into the box). Tests replace it.
	guestSessions func(ctx context.Context, box string) ([]box.GuestSession, error)
}

// sessionCache is a running box's detachable sessions as of one ssh round
// trip (box.Service.GuestSessions). Snapshot never waits for one: it shows
// the last list and asks again in the background when it is older than
// sessionsTTL.
type sessionCache struct {
	list    []menu.SessionView
	at      time.Time
	pending bool
}

// sessionsTTL is how often the app asks a running box for its sessions;
// sessionsTimeout bounds one ask.
const (
	sessionsTTL     = 20 * time.Second
	sessionsTimeout = 15 * time.Second
)

// detached returns the last known detachable sessions of a box and
// refreshes them off the caller's goroutine when stale.
func (b *coreBackend) detached(s box.Status, now time.Time) []menu.SessionView {
	if s.State != boxstate.Running {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions == nil {
		b.sessions = map[string]sessionCache{}
	}
	c := b.sessions[s.Name]
	if !c.pending && now.Sub(c.at) >= sessionsTTL {
		c.pending = true
		b.sessions[s.Name] = c
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), sessionsTimeout)
			defer cancel()
			list := b.guestSessions
			if list == nil {
				list = b.svc.GuestSessions
			}
			gs, err := list(ctx, s.Name)
			var views []menu.SessionView
			for _, g := range gs {
				// ParseGuestSessions kept only names that pass the rule;
				// the menu checks again before an argv (CommandArgv).
				views = append(views, menu.SessionView{Name: g.Name, Agent: g.Agent, Attached: g.Attached, Activity: g.Activity})
			}
			if err != nil {
				views = c.list // a box busy or slow to answer: keep the last list
			}
			b.mu.Lock()
			b.sessions[s.Name] = sessionCache{list: views, at: time.Now()}
			b.mu.Unlock()
		}()
	}
	return c.list
}

// reposCache is the scan of the project_roots of the global config.
type reposCache struct {
	at    time.Time
	roots []string
	repos []menu.Project
}

// reposTTL: the roots are read again at most this often (a Snapshot runs
// every few seconds; a scan reads up to recent.MaxScan entries per root).
const reposTTL = 30 * time.Second

// projectRepos returns the repositories under the configured project
// roots, and the roots as written in the config.
func (b *coreBackend) projectRepos(now time.Time) ([]menu.Project, []string) {
	b.mu.Lock()
	c := b.repos
	b.mu.Unlock()
	if !c.at.IsZero() && now.Sub(c.at) < reposTTL {
		return c.repos, c.roots
	}
	c = reposCache{at: now}
	l, err := config.LoadFile(config.KindGlobal, b.svc.Layout.GlobalConfig())
	if err == nil {
		home, _ := os.UserHomeDir()
		var abs []string
		for _, r := range l.Config.ProjectRoots {
			if a := recent.ExpandRoot(r, home); a != "" {
				abs = append(abs, a)
				c.roots = append(c.roots, r)
			}
		}
		for _, r := range recent.ScanRoots(abs) {
			c.repos = append(c.repos, menu.Project{Dir: r.Dir, LastUsed: r.Mod})
		}
	}
	b.mu.Lock()
	b.repos = c
	b.mu.Unlock()
	return c.repos, c.roots
}

// commitCount is a box's unpulled commits as of one ssh round trip.
// Snapshot never waits for one: it shows the last count and, when that is
// older than commitCountTTL, asks again in the background.
type commitCount struct {
	n       int
	at      time.Time
	pending bool
}

const commitCountTTL = time.Minute

// newCommits returns the last known count of box's unpulled commits and
// refreshes it off the caller's goroutine when stale.
func (b *coreBackend) newCommits(s box.Status, now time.Time) int {
	if s.State != boxstate.Running {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.counts == nil {
		b.counts = map[string]commitCount{}
	}
	c := b.counts[s.Name]
	if !c.pending && now.Sub(c.at) >= commitCountTTL {
		c.pending = true
		b.counts[s.Name] = c
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			n, err := b.svc.NewCommits(ctx, s.Name)
			if err != nil {
				n = 0 // not a repository, box busy: nothing to offer
			}
			b.mu.Lock()
			b.counts[s.Name] = commitCount{n: n, at: time.Now()}
			b.mu.Unlock()
		}()
	}
	return c.n
}

// deniedCache is a box's denied hosts as of one read of its egress log.
// Snapshot runs every few seconds; the log is read again only when it
// changed (size or mtime) or the read is a minute old (the 24 h window
// moves), not on every tick.
type deniedCache struct {
	size  int64
	mod   time.Time
	read  time.Time
	hosts []DeniedHost
	// asked are the log's request lines and the allowed decisions after
	// the first of them: what core/approval Pending needs.
	asked []egress.Entry
}

// deniedHosts returns the box's denied hosts of the last 24 h, and the
// log lines its requests need (see deniedCache).
func (b *coreBackend) deniedHosts(name string, now time.Time) ([]DeniedHost, []egress.Entry) {
	path := b.svc.Layout.EgressLog(name)
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.denied[name]; ok && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) && now.Sub(c.read) < time.Minute {
		return c.hosts, c.asked
	}
	entries, err := egress.ReadLog(path, now.Add(-approval.RequestTTL))
	if err != nil {
		return nil, nil
	}
	var asked []egress.Entry
	type dest struct {
		host string
		port int
	}
	lastWho := map[dest]string{} // who the latest denial of a destination says it was
	for _, e := range entries {
		if e.Kind == egress.KindRequest || len(asked) > 0 && e.IsDecision() && e.Allowed {
			asked = append(asked, e)
		}
		if e.IsDecision() && !e.Allowed && e.Who != nil {
			lastWho[dest{e.Host, e.Port}] = whoText(*e.Who)
		}
	}
	var hosts []DeniedHost
	for _, h := range egress.Summarize(entries) {
		if !h.Allowed {
			hosts = append(hosts, DeniedHost{Host: h.Host, Port: h.Port, Count: h.Count, Last: h.LastSeen,
				Malformed: malformed(h.Reason), Who: lastWho[dest{h.Host, h.Port}]})
		}
	}
	if b.denied == nil {
		b.denied = map[string]deniedCache{}
	}
	b.denied[name] = deniedCache{size: fi.Size(), mod: fi.ModTime(), read: now, hosts: hosts, asked: asked}
	return hosts, asked
}

// credCache is the credential use of every box, read from the audit log at
// most once per change of the file and once a minute.
type credCache struct {
	size  int64
	mod   time.Time
	read  time.Time
	boxes map[string][]CredentialUse
}

// credentialUses is the box's credential use in the last 24 hours.
func (b *coreBackend) credentialUses(name string, now time.Time) []CredentialUse {
	path := b.svc.Layout.AuditLog()
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.creds
	if c.boxes == nil || c.size != fi.Size() || !c.mod.Equal(fi.ModTime()) || now.Sub(c.read) >= time.Minute {
		evs, err := audit.Read(path, audit.Filter{Since: now.Add(-24 * time.Hour)})
		if err != nil {
			return nil
		}
		byBox := map[string][]audit.Event{}
		for _, e := range evs {
			if e.Kind == audit.KindCredentialUse {
				byBox[e.Box] = append(byBox[e.Box], e)
			}
		}
		c = credCache{size: fi.Size(), mod: fi.ModTime(), read: now, boxes: map[string][]CredentialUse{}}
		for bx, es := range byBox {
			uses, _ := audit.CredentialUses(es)
			for _, u := range uses {
				c.boxes[bx] = append(c.boxes[bx], CredentialUse{Name: u.Credential, Uses: u.Uses, Last: u.LastUse})
			}
		}
		b.creds = c
	}
	return c.boxes[name]
}

var (
	_ Backend       = (*coreBackend)(nil)
	_ RemoteBackend = (*coreBackend)(nil)
)

// malformed reports whether a denial reason says the request did not parse:
// its host is raw request text, never something to allow.
func malformed(r egress.Reason) bool {
	return r == egress.ReasonMalformedAuthority || r == egress.ReasonUserinfo
}

// Main runs the menu-bar app over core; `corral app` calls it.
func Main(ctx context.Context, l paths.Layout, exe string, logger *slog.Logger) error {
	svc, err := box.NewService(l, exe, logger, audit.ActorApp)
	if err != nil {
		return err
	}
	b := &coreBackend{svc: svc, remote: remotebox.Client{Runner: remote.Runner{Batch: true, ControlDir: svc.Layout.RemoteControlDir()}}}
	return Run(ctx, Options{
		Backend:    b,
		Remote:     b,
		Logger:     logger,
		CorralPath: exe,
		StateDir:   l.RunDir(),
		Terminal:   func() string { return terminalApp(l.GlobalConfig(), logger) },
	})
}

// terminalApp reads the terminal key of the global config at each use, so
// an edit applies to the next session without restarting the app. A file
// that does not load gives the default, and a warning in the app log.
func terminalApp(globalConfig string, logger *slog.Logger) string {
	l, err := config.LoadFile(config.KindGlobal, globalConfig)
	if err != nil {
		if logger != nil {
			logger.Warn("reading the terminal key", "err", err)
		}
		return ""
	}
	t := config.Merge(l).Settings().Terminal
	if !config.ValidTerminal(t) {
		return "" // unset, or a file that did not validate: the default
	}
	return t
}

func (b *coreBackend) Snapshot(ctx context.Context) (State, error) {
	list, err := b.svc.List()
	var st State
	now := time.Now()
	// The organisation's managed policy: a permanent approval it refuses
	// is offered disabled, saying why (this machine's boxes only: a
	// remote host has its own).
	noPermanent := ""
	if err := config.SystemManaged().CheckApproval("always", 0); err != nil {
		noPermanent = err.Error()
	}
	for _, s := range list {
		idleStop, _ := time.ParseDuration(s.IdleStop)
		v := BoxView{
			Name: s.Name, Project: s.Project, State: s.Shown(),
			MemBytes: s.MemBytes, PeakBytes: s.PeakBytes, MemCapBytes: s.MemoryCap,
			Idle: s.Idle, Sessions: s.Live, IdleStop: idleStop, IdleDue: s.IdleDue,
			LearningUntil: s.LearningUntil, NoPermanentAllow: noPermanent,
			// A box whose last boot's provisioning failed (Failed) says
			// which step, in its submenu, as corral up and ls do.
			Err: s.ProvisionError,
		}
		if s.Saved != nil && s.Saved.Reason == boxmeta.SavedLowMemory {
			v.SavedLowMemory, v.SavedAt = true, s.Saved.At
		}
		for _, p := range s.Ports {
			v.Ports = append(v.Ports, p.Host)
		}
		v.HostPorts, v.HostPortsRoute = slices.Clone(s.HostPorts), box.HostPortsRoute(s.Meta)
		var asked []egress.Entry
		v.Denied, asked = b.deniedHosts(s.Name, now)
		v.Asked = b.askedRequests(s.Name, asked)
		v.Credentials = b.credentialUses(s.Name, now)
		v.NewCommits = b.newCommits(s, now)
		open, _ := boxmeta.OpenRequestsErr(b.svc.Layout, s.Name, s.Project) // unknown: none shown (corral ls says why)
		v.Requests, v.Refused = len(open.Pending), len(open.Refused)
		v.Detached = b.detached(s, now)
		st.Boxes = append(st.Boxes, v)
		st.Projects = append(st.Projects, Project{Dir: s.Project, Name: filepath.Base(s.Project), Box: s.Name, LastUsed: s.LastActivity})
	}
	// Folders corral used lately whose box is gone (or never came up).
	boxOf := map[string]string{}
	for _, p := range st.Projects {
		boxOf[p.Dir] = p.Box
	}
	for _, e := range recent.Read(b.svc.Layout) {
		if _, ok := boxOf[e.Dir]; ok {
			continue
		}
		// A folder since removed or renamed is not offered (at most
		// recent.MaxEntries stats per refresh).
		if fi, err := os.Stat(e.Dir); err != nil || !fi.IsDir() {
			continue
		}
		st.Projects = append(st.Projects, Project{Dir: e.Dir, LastUsed: e.Used})
	}
	repos, roots := b.projectRepos(now)
	st.Roots = roots
	for _, r := range repos {
		r.Box = boxOf[r.Dir]
		st.Repos = append(st.Repos, r)
	}
	return st, err
}

func (b *coreBackend) Start(ctx context.Context, name string) error { return b.svc.Start(ctx, name) }

// Pull is `corral pull` for box; the count it leaves is 0 until the next
// refresh asks the box again.
func (b *coreBackend) Pull(ctx context.Context, name string) error {
	_, err := b.svc.Pull(ctx, name, box.PullOptions{})
	if err == nil {
		b.mu.Lock()
		if b.counts != nil {
			b.counts[name] = commitCount{at: time.Now()}
		}
		b.mu.Unlock()
	}
	return err
}

func (b *coreBackend) Stop(ctx context.Context, name string) error {
	return b.svc.Stop(ctx, name, audit.KindStop)
}

// StopIdle is the sweep of `corral stop --idle`: it stops the boxes whose
// Snapshot says IdleDue. The app runs GuardGit first, as every CLI command
// does.
func (b *coreBackend) StopIdle(ctx context.Context) ([]string, error) {
	return b.svc.Sweep(ctx)
}

// GuardGit reverts what boxes changed in their projects' git directories
// (audited by core/box) and reports it for the app's notifications.
func (b *coreBackend) GuardGit(ctx context.Context) []GitRevert {
	out := b.appeared()
	for _, r := range b.svc.GuardGit() {
		g := GitRevert{Box: r.Box, Err: r.Err}
		if m, err := boxmeta.Read(b.svc.Layout, r.Box); err == nil {
			g.Project = m.Project
		}
		gitDir := filepath.Join(g.Project, ".git")
		for _, c := range r.Changes {
			// "modified config" under the .git the title names.
			if rel, err := filepath.Rel(gitDir, c.Path); g.Project != "" && err == nil && filepath.IsLocal(rel) {
				c.Path = rel
			}
			g.Changes = append(g.Changes, c.String())
		}
		out = append(out, g)
	}
	return out
}

// appeared lists, once each, the repository entries boxes' brokers saw
// appear in their work trees (gitwatch records), for the notification.
func (b *coreBackend) appeared() []GitRevert {
	list, err := boxmeta.List(b.svc.Layout)
	if err != nil {
		return nil
	}
	b.appearedMu.Lock()
	defer b.appearedMu.Unlock()
	if b.appearedSeen == nil {
		b.appearedSeen = map[string]bool{}
	}
	var out []GitRevert
	for _, m := range list {
		seen, err := gitwatch.Read(b.svc.Layout, m.Name)
		if err != nil {
			continue
		}
		r := GitRevert{Box: m.Name, Project: m.Project}
		for _, x := range seen {
			key := m.Name + "\x00" + x.Path
			if !b.appearedSeen[key] {
				b.appearedSeen[key] = true
				r.Appeared = append(r.Appeared, x.Path)
			}
		}
		if len(r.Appeared) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// Allow calls the same core function as `corral allow`; the box's broker
// picks the approval up live.
func (b *coreBackend) Allow(ctx context.Context, name, host string, scope AllowScope) error {
	entry, sc, dur := grant(host, scope)
	var err error
	if sc == approval.ScopeFor {
		_, err = approval.AllowFor(b.svc.Layout, name, entry, dur, audit.ActorApp)
	} else {
		_, err = approval.Allow(b.svc.Layout, name, entry, sc, audit.ActorApp)
	}
	return err
}

// grant is what a menu or notification Allow of scope grants for a denied
// host: the entry (a domain's "*.parent" for AllowDomain, "" when host is
// no domain, which Allow refuses), the approval scope and, for
// ScopeFor, its duration. The one mapping for local and remote boxes.
func grant(host string, scope AllowScope) (entry string, sc approval.Scope, d time.Duration) {
	switch scope {
	case AllowSession:
		return host, approval.ScopeSession, 0
	case AllowOnce:
		return host, approval.ScopeOnce, 0
	case AllowDomain:
		return egress.DomainEntry(host), approval.ScopeAlways, 0
	case AllowHour:
		return host, approval.ScopeFor, menu.HourFor
	}
	return host, approval.ScopeAlways, 0
}

func (b *coreBackend) Rebuild(ctx context.Context, name string) error {
	m, err := boxmeta.Read(b.svc.Layout, name)
	if err != nil {
		return err
	}
	r, err := boxmeta.Resolve(b.svc.Layout, boxmeta.ResolveOptions{Dir: m.Project})
	if err != nil {
		return err
	}
	_, err = b.svc.Rebuild(ctx, r, box.UpOptions{})
	return err
}

func (b *coreBackend) EgressLogPath(name string) string { return b.svc.Layout.EgressLog(name) }

func (b *coreBackend) ConfigPath() string { return b.svc.Layout.GlobalConfig() }

// boxesPoll is how often WatchDenials looks for boxes created or removed
// since it started. A box found late loses no denial: its log is read from
// the box's creation on.
const boxesPoll = 2 * time.Second

// isNewDenial reports whether a log line is a denial to ask the user
// about: a denial from since on that is not the outcome of a hold (HeldMS
// set), whose beginning was reported already.
func isNewDenial(e egress.Entry, since time.Time) bool {
	return e.IsDecision() && !e.Allowed && e.HeldMS == 0 && !e.Time.Before(since)
}

// The app follows every box's egress log on one ticker (denialPoll), not
// a goroutine and a ticker per box: a box whose broker runs is read at
// every tick (a denial reaches the menu within about half a second); one
// whose broker does not (a stopped box: its log grows only when it starts
// again) every stoppedEvery ticks; the box list is read again every
// boxesPoll.
const (
	denialPoll   = 500 * time.Millisecond
	stoppedEvery = 10 // ticks: a stopped box's log every 5 s
)

// pollDue reports whether a box's log is read at tick n (counted from 0):
// every tick while its broker runs, every stoppedEvery ticks otherwise.
func pollDue(n uint64, live bool) bool {
	return live || n%stoppedEvery == 0
}

// WatchDenials follows the egress log of every box, including boxes created
// after it started, and reports new denials.
func (b *coreBackend) WatchDenials(ctx context.Context, fn func(box string, d DeniedHost)) error {
	type follower struct {
		tail    *egress.LogTail
		created time.Time
		live    bool // its broker runs (BrokerPID in its metadata)
	}
	following := map[string]*follower{}
	defer func() {
		for _, f := range following {
			f.tail.Close()
		}
	}()
	follow := func(name string, since time.Time, fromStart bool) *egress.LogTail {
		report := func(e egress.Entry) {
			if isNewDenial(e, since) {
				d := DeniedHost{Host: e.Host, Port: e.Port, Count: e.N(), Last: e.Time, Malformed: malformed(e.Reason)}
				if e.Who != nil {
					d.Who = whoText(*e.Who)
				}
				fn(name, d)
			}
			if e.Kind == egress.KindRequest && !e.Time.Before(since) {
				r := boxRequest(e)
				fn(name, DeniedHost{Host: e.Host, Port: e.Port, Count: 1, Last: e.Time, Asked: &r})
			}
		}
		return egress.NewLogTail(b.svc.Layout.EgressLog(name), fromStart, report)
	}
	first := true
	rescan := func() error {
		metas, err := boxmeta.List(b.svc.Layout)
		switch {
		case err != nil && first && len(metas) == 0:
			return err
		case err != nil && !first:
			return nil // a box's metadata half-read or unreadable: keep what is followed, retry next time
		}
		seen := map[string]bool{}
		for _, m := range metas {
			seen[m.Name] = true
			if f, ok := following[m.Name]; ok && f.created.Equal(m.Created) {
				f.live = m.BrokerPID != 0
				continue
			} else if ok {
				f.tail.Close() // removed and created again under the same name
			}
			// Boxes there at the start are followed from now on; a box
			// that appeared later from its creation, as its broker may
			// have logged before this saw it (older lines in a reused log
			// belong to an earlier box of that name).
			var since time.Time
			if !first {
				since = m.Created
			}
			following[m.Name] = &follower{tail: follow(m.Name, since, !first), created: m.Created, live: m.BrokerPID != 0}
		}
		for name, f := range following {
			if !seen[name] {
				f.tail.Close()
				delete(following, name)
			}
		}
		first = false
		return nil
	}
	if err := rescan(); err != nil {
		return err
	}
	tick := time.NewTicker(denialPoll)
	defer tick.Stop()
	rescanEvery := uint64(max(boxesPoll/denialPoll, 1))
	for n := uint64(0); ; n++ {
		for _, f := range following {
			if pollDue(n, f.live) {
				f.tail.Poll()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		if (n+1)%rescanEvery == 0 {
			if err := rescan(); err != nil {
				return err
			}
		}
	}
}

// RemoteHosts lists the hosts of ~/.corral/hosts.toml.
func (b *coreBackend) RemoteHosts(ctx context.Context) ([]menu.RemoteHost, error) {
	hosts, err := remote.Load(b.svc.Layout.HostsFile())
	if err != nil {
		return nil, err
	}
	out := make([]menu.RemoteHost, 0, len(hosts))
	for _, h := range hosts {
		out = append(out, menu.RemoteHost{Name: h.Name, URL: h.URL})
	}
	return out, nil
}

// ReadHost reads one host's boxes over ssh (core/remotebox, its own
// deadline).
func (b *coreBackend) ReadHost(ctx context.Context, name string) menu.RemoteHost {
	h, err := remote.Find(b.svc.Layout, name)
	if err != nil {
		return menu.RemoteHost{Name: name, Err: remotebox.Reason(err), At: time.Now()}
	}
	return remoteView(b.remote.Read(ctx, h))
}

// remoteView is a read host as the menu shows it. Strings are as the host
// sent them (bounded by remotebox); the menu shows them through
// core/display.
func remoteView(r remotebox.Result) menu.RemoteHost {
	v := menu.RemoteHost{Name: r.Host, URL: r.URL, At: r.At}
	if r.Err != nil {
		v.Err = r.Why()
		return v
	}
	v.Boxes = make([]BoxView, 0, len(r.Boxes))
	for _, x := range r.Boxes {
		bv := BoxView{Name: x.Name, Host: r.Host, Project: x.Project, State: x.State,
			MemBytes: x.MemBytes, PeakBytes: x.PeakBytes, MemCapBytes: x.MemCapBytes,
			Idle: x.Idle, Sessions: x.Sessions, LearningUntil: x.LearningUntil, DeniedUnknown: x.DeniedErr}
		for _, d := range x.Denied {
			bv.Denied = append(bv.Denied, DeniedHost{Host: d.Host, Port: d.Port, Count: d.Count, Last: d.Last, Malformed: d.Malformed})
		}
		v.Boxes = append(v.Boxes, bv)
	}
	return v
}

// RemoteStart is corral --host HOST start BOX.
func (b *coreBackend) RemoteStart(ctx context.Context, host, name string) error {
	h, err := remote.Find(b.svc.Layout, host)
	if err != nil {
		return err
	}
	return b.remote.Start(ctx, h, name)
}

// RemoteStop is corral --host HOST stop BOX.
func (b *coreBackend) RemoteStop(ctx context.Context, host, name string) error {
	h, err := remote.Find(b.svc.Layout, host)
	if err != nil {
		return err
	}
	return b.remote.Stop(ctx, h, name)
}

// RemoteAllow is corral --host HOST allow with the scope's flag: the host's
// own corral runs its grant check and writes its approvals, as Allow does
// here.
func (b *coreBackend) RemoteAllow(ctx context.Context, host, name, entry string, scope AllowScope) error {
	h, err := remote.Find(b.svc.Layout, host)
	if err != nil {
		return err
	}
	entry, sc, dur := grant(entry, scope)
	return b.remote.Allow(ctx, h, name, entry, sc, dur)
}
