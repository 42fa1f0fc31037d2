package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/paths"
	"github.com/spf13/cobra"
)

// BrokerOptions are the options of `corral broker`.
type BrokerOptions struct {
	IO      *IOStreams
	Factory *Factory

	Listen      string
	Box         string
	Allow       []string
	AllowRanges []string
	LogFile     string

	// Test hooks. They are never set from flags or config: box mode takes
	// its policy only from the box's config and approvals.
	ctx        context.Context   // nil: background; SIGINT and SIGTERM also stop the broker
	resolver   egress.Resolver   // nil: the system resolver
	testRanges []string          // extra CIDR ranges in box mode (tests reach 127.0.0.1 upstreams)
	listening  func(addr string) // called once the listener is open
	now        func() time.Time  // nil: time.Now
}

// NewCmdBroker builds `corral broker`.
func NewCmdBroker(f *Factory, runF func(*BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "broker --listen 127.0.0.1:PORT (--box BOX | --allow HOST...)",
		Short: "Run an egress broker (the allow-list proxy of a box) in the foreground",
		Long: `Broker runs the host-side egress proxy until SIGINT or SIGTERM.

With --box it serves a box: the allow-list is the agent's default hosts,
the egress config and the approvals granted with "corral allow", reloaded
live when any of those files changes. Decisions go to the box's egress log
(see "corral egress") and denials to the audit log. corral up starts this
mode by itself.

Without --box it is a standalone proxy for debugging and benchmarks: the
allow-list is the --allow entries and --allow-range ranges, and decisions
go to --log if given.

The broker listens on loopback only.`,
		Example: `  corral broker --box web-3f2a1c --listen 127.0.0.1:42123
  corral broker --listen 127.0.0.1:8080 --allow 'api.example.test' --allow '*.example.test:*' --allow-range 127.0.0.0/8 --log /tmp/egress.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkBrokerOptions(opts); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return brokerRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Listen, "listen", "", "loopback `address` to listen on, such as 127.0.0.1:42000")
	cmd.Flags().StringVar(&opts.Box, "box", "", "serve `BOX` with its config and approvals")
	cmd.Flags().StringArrayVar(&opts.Allow, "allow", nil, "allow `ENTRY` (host, *.domain, host:port or host:*); without --box only")
	cmd.Flags().StringArrayVar(&opts.AllowRanges, "allow-range", nil, "allow private or IP-literal destinations in `CIDR`; without --box only")
	cmd.Flags().StringVar(&opts.LogFile, "log", "", "append decisions to `FILE` as JSON lines; without --box only")
	return cmd
}

func checkBrokerOptions(opts *BrokerOptions) error {
	if opts.Listen == "" {
		return errors.New("corral broker: --listen is required, such as --listen 127.0.0.1:42000")
	}
	ap, err := netip.ParseAddrPort(opts.Listen)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("corral broker: --listen %q: the broker listens on a loopback IP and port only, such as 127.0.0.1:42000", opts.Listen)
	}
	if opts.Box != "" {
		switch {
		case len(opts.Allow) > 0:
			return fmt.Errorf("corral broker: --allow %q: a box's allow-list comes from its config and approvals\nhint: corral allow %s %s", opts.Allow[0], opts.Box, opts.Allow[0])
		case len(opts.AllowRanges) > 0:
			return fmt.Errorf("corral broker: --allow-range %q cannot be used with --box", opts.AllowRanges[0])
		case opts.LogFile != "":
			return fmt.Errorf("corral broker: --log %q cannot be used with --box (decisions go to the box's egress log)", opts.LogFile)
		}
	}
	return nil
}

func brokerRun(opts *BrokerOptions) error {
	ctx := opts.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := opts.Factory.Logger
	if logger == nil {
		logger = discardLogger()
	}
	if opts.Box != "" {
		return brokerBoxRun(ctx, opts, logger)
	}
	policy, err := egress.ParsePolicy(opts.Allow, opts.AllowRanges)
	if err != nil {
		return fmt.Errorf("corral broker: %w", err)
	}
	var decisions egress.DecisionLogger
	if opts.LogFile != "" {
		dl, err := egress.OpenLog(opts.LogFile, "", logger)
		if err != nil {
			return err
		}
		defer dl.Close()
		decisions = dl
	}
	srv, err := egress.NewServer(egress.Config{Listen: opts.Listen, Policy: policy, Log: decisions,
		Resolver: opts.resolver, Logger: logger})
	if err != nil {
		return err
	}
	return serveBroker(ctx, opts, srv)
}

// serveBroker listens, says where, and serves until ctx is done.
func serveBroker(ctx context.Context, opts *BrokerOptions, srv *egress.Server) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("egress broker listening on %s: %w", opts.Listen, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "corral broker: listening on %s\n", ln.Addr())
	if opts.listening != nil {
		opts.listening(ln.Addr().String())
	}
	return srv.Serve(ctx, ln)
}

// brokerBoxRun serves a box until ctx is done: the policy comes from the
// box's config and approvals and follows their changes.
func brokerBoxRun(ctx context.Context, opts *BrokerOptions, logger *slog.Logger) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	if err := l.Ensure(); err != nil {
		return err
	}
	m, err := box.ReadMeta(l, opts.Box)
	if err != nil {
		return err
	}
	bp, err := newBoxPolicy(l, opts.Box, m.Project, f.Platform, opts.testRanges, logger)
	if err != nil {
		return err
	}
	policy, err := bp.load()
	if err != nil {
		return fmt.Errorf("egress policy of box %s: %w", opts.Box, err)
	}
	decisionLog, err := egress.OpenLog(l.EgressLog(opts.Box), opts.Box, logger)
	if err != nil {
		return err
	}
	defer decisionLog.Close()
	auditLog, err := audit.Open(l.AuditLog())
	if err != nil {
		return err
	}
	defer auditLog.Close()
	decisions := newDenialAudit(decisionLog, auditLog.Record, opts.Box, logger)
	srv, err := egress.NewServer(egress.Config{Listen: opts.Listen, Box: opts.Box, Policy: policy,
		Log: decisions, Resolver: opts.resolver, Logger: logger})
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One mutex orders load and SetPolicy across the file watcher and the
	// expiry timer, so a policy read earlier is never applied over a newer
	// one (which could resurrect an expired approval).
	var mu sync.Mutex
	reload := func() (*egress.Policy, error) {
		mu.Lock()
		defer mu.Unlock()
		p, err := bp.load()
		if err == nil {
			srv.SetPolicy(p)
		}
		return p, err
	}
	var wg sync.WaitGroup
	watchErr := make(chan error, 1)
	wg.Go(func() {
		// apply is a no-op: reload already applied the policy under mu.
		err := egress.WatchFiles(ctx, bp.files(), reload, func(*egress.Policy) {}, logger)
		if err != nil {
			watchErr <- err
			cancel()
		}
	})
	wg.Go(func() { bp.expireLoop(ctx, reload) })
	// Guest connections under the host funnel arrive as fds passed by
	// `corral guest-conn` on the box's Unix socket (core/funnel).
	fdln, err := funnel.Listen(l.BrokerSocket(opts.Box), logger)
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	wg.Go(func() { _ = srv.Serve(ctx, fdln) })
	err = serveBroker(ctx, opts, srv)
	cancel()
	wg.Wait()
	select {
	case werr := <-watchErr:
		return errors.Join(err, fmt.Errorf("egress broker of box %s stopped: %w", opts.Box, werr))
	default:
	}
	return err
}

// boxPolicy builds a box's egress policy from its files: the agent's
// default hosts and the egress config (box.Resolve on the box's project),
// then the approvals.
type boxPolicy struct {
	layout   paths.Layout
	box      string
	project  string
	platform config.Platform
	ranges   []string
	store    *approval.Store
	logger   *slog.Logger
	now      func() time.Time

	mu        sync.Mutex
	cfg       *config.Result      // last config that loaded
	approvals []approval.Approval // last approvals that loaded
	next      time.Time           // earliest expiry among the active approvals
	changed   chan struct{}       // next changed
}

func newBoxPolicy(l paths.Layout, boxName, projectDir string, platform config.Platform, ranges []string, logger *slog.Logger) (*boxPolicy, error) {
	store, err := approval.Open(l, boxName)
	if err != nil {
		return nil, err
	}
	return &boxPolicy{layout: l, box: boxName, project: projectDir, platform: platform, ranges: ranges,
		store: store, logger: logger, now: time.Now, changed: make(chan struct{}, 1)}, nil
}

// files are the files the policy is built from, for the watcher.
func (b *boxPolicy) files() []string {
	return []string{b.layout.GlobalConfig(), filepath.Join(b.project, config.ProjectFile),
		b.layout.ProjectConfig(b.box), b.store.Path()}
}

// loadConfig loads the box's effective config and checks that its
// allow-list parses. A config with problems is an error as a whole: a
// failed load's partial result may hold a layer the trust policy refused.
func (b *boxPolicy) loadConfig() (config.Result, error) {
	r, err := box.Resolve(b.layout, box.ResolveOptions{Dir: b.project, Platform: b.platform})
	if err != nil {
		return config.Result{}, fmt.Errorf("loading the config of box %s: %w", b.box, err)
	}
	if r.Project.Box != b.box {
		return config.Result{}, fmt.Errorf("loading the config of box %s: its project %s now belongs to box %s", b.box, b.project, r.Project.Box)
	}
	rules, err := approval.AllowList(r.Config, nil)
	if err == nil {
		names, ranges := splitEgressRanges(approval.Entries(rules))
		_, err = egress.ParsePolicy(names, ranges)
	}
	if err != nil {
		return config.Result{}, fmt.Errorf("loading the allow-list of box %s: %w", b.box, err)
	}
	return r.Config, nil
}

// rules returns the allow-list in force now. The config and the approvals
// are loaded separately and each keeps its last good value when it fails to
// load (the failure is logged): a broken config must neither drop the
// allow-list nor keep an approval past its expiry. Before anything has
// loaded, a failure is returned.
func (b *boxPolicy) rules() ([]approval.Rule, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cfg, err := b.loadConfig(); err != nil {
		if b.cfg == nil {
			return nil, err
		}
		b.logger.Error("reloading egress config; keeping the previous one", "box", b.box, "err", err)
	} else {
		b.cfg = &cfg
	}
	if all, err := b.store.All(); err != nil {
		if b.approvals == nil {
			return nil, err
		}
		b.logger.Error("reloading egress approvals; keeping the previous ones", "box", b.box, "err", err)
	} else {
		if all == nil {
			all = []approval.Approval{}
		}
		b.approvals = all
	}
	now := b.now()
	var active []approval.Approval
	for _, a := range b.approvals {
		if a.ActiveAt(now) {
			active = append(active, a)
		}
	}
	if next := approval.NextExpiry(active); !next.Equal(b.next) {
		b.next = next
		select {
		case b.changed <- struct{}{}:
		default:
		}
	}
	return approval.AllowList(*b.cfg, active)
}

// load returns the policy in force now.
func (b *boxPolicy) load() (*egress.Policy, error) {
	rules, err := b.rules()
	if err != nil {
		return nil, err
	}
	names, ranges := splitEgressRanges(approval.Entries(rules))
	return egress.ParsePolicy(names, append(ranges, b.ranges...))
}

// splitEgressRanges separates CIDR entries of the trusted egress config
// (such as "127.0.0.0/8") from host entries: ParsePolicy takes them as
// ranges. Approvals never hold one (approval.Canonical refuses IP literals).
func splitEgressRanges(entries []string) (names, ranges []string) {
	for _, e := range entries {
		if _, err := netip.ParsePrefix(e); err == nil {
			ranges = append(ranges, e)
		} else {
			names = append(names, e)
		}
	}
	return names, ranges
}

func (b *boxPolicy) nextExpiry() time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.next
}

// expireLoop reloads the policy when an approval expires, until ctx is
// done: expiry changes the policy without any file changing.
func (b *boxPolicy) expireLoop(ctx context.Context, reload func() (*egress.Policy, error)) {
	for {
		var fire <-chan time.Time
		var timer *time.Timer
		if next := b.nextExpiry(); !next.IsZero() {
			timer = time.NewTimer(max(next.Sub(b.now()), 0))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-b.changed:
		case <-fire:
			if _, err := reload(); err != nil {
				b.logger.Error("expiring egress approvals", "box", b.box, "err", err)
			}
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// auditWindow is how often a broker records a denial of the same host in
// the audit log; the egress log has every one.
const auditWindow = 10 * time.Minute

// maxAuditHosts bounds the hosts remembered for auditWindow, so that a box
// trying endless distinct names cannot grow the broker's memory or flood
// the audit log without bound: when full, further denials are not audited
// until entries age out.
const maxAuditHosts = 4096

// denialAudit passes decisions on and records denials in the audit log, at
// most once per host per auditWindow.
type denialAudit struct {
	next   egress.DecisionLogger
	record func(audit.Event) error
	box    string
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

var _ egress.DecisionLogger = (*denialAudit)(nil)

func newDenialAudit(next egress.DecisionLogger, record func(audit.Event) error, boxName string, logger *slog.Logger) *denialAudit {
	return &denialAudit{next: next, record: record, box: boxName, logger: logger, now: time.Now, last: map[string]time.Time{}}
}

// LogDecision logs d and audits it if it is a denial not recorded lately.
func (a *denialAudit) LogDecision(d egress.Decision) {
	a.next.LogDecision(d)
	if d.Allowed || !a.due(d.Host) {
		return
	}
	err := a.record(audit.Event{Kind: audit.KindEgressDenied, Box: a.box,
		Fields: map[string]any{"host": d.Host, "port": d.Port, "reason": string(d.Reason)}})
	if err != nil {
		a.logger.Warn("recording an egress denial in the audit log", "box", a.box, "host", d.Host, "err", err)
	}
}

func (a *denialAudit) due(host string) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.last[host]; ok && now.Sub(t) < auditWindow {
		return false
	}
	if len(a.last) >= maxAuditHosts {
		for h, t := range a.last {
			if now.Sub(t) >= auditWindow {
				delete(a.last, h)
			}
		}
		if len(a.last) >= maxAuditHosts {
			return false
		}
	}
	a.last[host] = now
	return true
}
