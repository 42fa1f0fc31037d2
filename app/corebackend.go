package app

import (
	"context"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
)

// coreBackend is the app's Backend over core/box: the same lifecycle
// service the CLI uses. Snapshot reads state files only (no limactl).
type coreBackend struct {
	svc *box.Service
}

var _ Backend = (*coreBackend)(nil)

// Main runs the menu-bar app over core; `corral app` calls it.
func Main(ctx context.Context, l paths.Layout, exe string, logger *slog.Logger) error {
	svc, err := box.NewService(l, exe, logger, audit.ActorApp)
	if err != nil {
		return err
	}
	b := &coreBackend{svc: svc}
	return Run(ctx, Options{
		Backend:    b,
		Logger:     logger,
		CorralPath: exe,
		StateDir:   l.RunDir(),
		Argv:       b.argv,
	})
}

// argv maps a menu action to the CLI command a terminal runs.
func (b *coreBackend) argv(corral string, a menu.Action) []string {
	project := a.Project
	if project == "" && a.Box != "" {
		if m, err := box.ReadMeta(b.svc.Layout, a.Box); err == nil {
			project = m.Project
		}
	}
	switch a.Kind {
	case menu.ActOpenSession, menu.ActOpenProject:
		return []string{corral, "claude", "-C", project}
	case menu.ActOpenShell:
		return []string{corral, "shell", "-C", project}
	}
	return nil
}

func (b *coreBackend) Snapshot(ctx context.Context) (State, error) {
	list, err := b.svc.List()
	var st State
	since := time.Now().Add(-24 * time.Hour)
	for _, s := range list {
		idleStop, _ := time.ParseDuration(s.IdleStop)
		v := BoxView{
			Name: s.Name, Project: s.Project, State: s.State,
			MemBytes: s.MemBytes, PeakBytes: s.PeakBytes, MemCapBytes: s.MemoryCap,
			Idle: s.Idle, Sessions: s.Live, IdleStop: idleStop,
		}
		if entries, err := egress.ReadLog(b.svc.Layout.EgressLog(s.Name), since); err == nil {
			for _, h := range egress.Summarize(entries) {
				if !h.Allowed {
					v.Denied = append(v.Denied, DeniedHost{Host: h.Host, Port: h.Port, Count: h.Count, Last: h.LastSeen})
				}
			}
		}
		st.Boxes = append(st.Boxes, v)
		st.Projects = append(st.Projects, Project{Dir: s.Project, Name: filepath.Base(s.Project), Box: s.Name, LastUsed: s.LastActivity})
	}
	return st, err
}

func (b *coreBackend) Start(ctx context.Context, name string) error { return b.svc.Start(ctx, name) }

func (b *coreBackend) Stop(ctx context.Context, name string) error {
	return b.svc.Stop(ctx, name, audit.KindStop)
}

func (b *coreBackend) StopIdle(ctx context.Context) ([]string, error) {
	list, err := b.svc.List()
	if err != nil {
		return nil, err
	}
	var stopped []string
	for _, s := range list {
		v := BoxView{State: s.State, Sessions: s.Live}
		if !v.IdleCandidate() {
			continue
		}
		if err := b.svc.Stop(ctx, s.Name, audit.KindIdleStop); err != nil {
			return stopped, err
		}
		stopped = append(stopped, s.Name)
	}
	return stopped, nil
}

// Allow calls the same core function as `corral allow`; the box's broker
// picks the approval up live.
func (b *coreBackend) Allow(ctx context.Context, name, host string, scope AllowScope) error {
	sc := approval.ScopeAlways
	switch scope {
	case AllowSession:
		sc = approval.ScopeSession
	case AllowOnce:
		sc = approval.ScopeOnce
	case AllowDomain:
		host = "*." + host
	}
	_, err := approval.Allow(b.svc.Layout, name, host, sc, audit.ActorApp)
	return err
}

func (b *coreBackend) Rebuild(ctx context.Context, name string) error {
	m, err := box.ReadMeta(b.svc.Layout, name)
	if err != nil {
		return err
	}
	r, err := box.Resolve(b.svc.Layout, box.ResolveOptions{Dir: m.Project})
	if err != nil {
		return err
	}
	_, err = b.svc.Rebuild(ctx, r, box.UpOptions{})
	return err
}

func (b *coreBackend) EgressLogPath(name string) string { return b.svc.Layout.EgressLog(name) }

func (b *coreBackend) ConfigPath() string { return b.svc.Layout.GlobalConfig() }

// WatchDenials follows every box's egress log and reports new denials.
func (b *coreBackend) WatchDenials(ctx context.Context, fn func(box string, d DeniedHost)) error {
	metas, err := box.ListMeta(b.svc.Layout)
	if err != nil && len(metas) == 0 {
		return err
	}
	errc := make(chan error, len(metas))
	for _, m := range metas {
		go func(name string) {
			errc <- egress.Follow(ctx, b.svc.Layout.EgressLog(name), func(e egress.Entry) {
				if e.IsDecision() && !e.Allowed {
					fn(name, DeniedHost{Host: e.Host, Port: e.Port, Count: 1, Last: e.Time})
				}
			})
		}(m.Name)
	}
	if len(metas) == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	return <-errc
}
