// Package broker is the lifecycle of an egress broker process (`corral
// broker`): in box mode it builds the box's egress policy from the box's
// config and approvals, follows their changes and approvals' expiry, logs
// every decision to the box's egress log and audits denials; standalone,
// it serves a fixed allow-list. The proxy itself is core/egress. The
// broker's command line (Argv, ParseArgv) lives here: core/box starts and
// recognises brokers with it. This package reads a box through core/boxmeta
// and never imports the lifecycle (core/box), so the lifecycle may import it.
package broker

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/secret"
)

// Options say what a broker serves.
type Options struct {
	Layout   paths.Layout
	Platform config.Platform // zero: the host's
	Logger   *slog.Logger    // nil: discard

	// Listen is the loopback address to listen on, such as 127.0.0.1:42000.
	Listen string
	// Box is the box served; its policy comes only from its config and
	// approvals. Empty: a standalone broker with the three fields below.
	Box         string
	Allow       []string // allow-list entries (host, *.domain, host:port or host:*)
	AllowRanges []string // CIDR ranges for private or IP-literal destinations
	LogFile     string   // decisions as JSON lines; "" for none

	// Listening is called once the listener is open, with its address.
	Listening func(addr net.Addr)

	// Secrets is the keychain brokered credentials are read from; nil:
	// secret.Default().
	Secrets secret.Store
	// Getenv is the broker's own environment, where brokered credentials
	// taken from host variables are read; nil: os.LookupEnv.
	Getenv func(string) (string, bool)

	// Test hooks, never set from flags or config.
	Resolver    egress.Resolver // nil: the system resolver
	ExtraRanges []string        // CIDR ranges added to a box's policy (tests reach 127.0.0.1 upstreams)
	// CredentialUpstreams and CredentialRootCAs replace a credential's
	// upstream and roots by name (tests reach httptest upstreams).
	CredentialUpstreams map[string]string
	CredentialRootCAs   map[string]*x509.CertPool
	// CredentialFlush is how often credential counts reach the audit log;
	// 0: every minute.
	CredentialFlush time.Duration
	// RequestHold is how long a connection to a host the box asked for
	// waits for the answer; 0: egress.RequestConfig's default.
	RequestHold time.Duration
}

// Check reports the first problem of o's shape: the broker listens on a
// loopback IP and port only, and a box takes its allow-list from its
// config and approvals alone.
func (o Options) Check() error {
	if o.Listen == "" {
		return errors.New("--listen is required, such as --listen 127.0.0.1:42000")
	}
	ap, err := netip.ParseAddrPort(o.Listen)
	if err != nil || !ap.Addr().Unmap().IsLoopback() {
		return fmt.Errorf("--listen %q: the broker listens on a loopback IP and port only, such as 127.0.0.1:42000", o.Listen)
	}
	if o.Box != "" {
		switch {
		case len(o.Allow) > 0:
			return hint.New(fmt.Errorf("--allow %q: a box's allow-list comes from its config and approvals", o.Allow[0]), fmt.Sprintf("corral allow %s %s", o.Box, o.Allow[0]))
		case len(o.AllowRanges) > 0:
			return fmt.Errorf("--allow-range %q cannot be used with --box", o.AllowRanges[0])
		case o.LogFile != "":
			return fmt.Errorf("--log %q cannot be used with --box (decisions go to the box's egress log)", o.LogFile)
		}
	}
	return nil
}

// Run serves until ctx is done.
func Run(ctx context.Context, o Options) error {
	if err := o.Check(); err != nil {
		return err
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Platform.OS == "" {
		o.Platform = boxmeta.HostPlatform()
	}
	if o.Box != "" {
		return runBox(ctx, o)
	}
	policy, err := egress.ParsePolicy(o.Allow, o.AllowRanges)
	if err != nil {
		return fmt.Errorf("the allow-list of a standalone broker: %w", err)
	}
	var decisions egress.DecisionLogger
	if o.LogFile != "" {
		dl, err := egress.OpenLog(o.LogFile, "", o.Logger)
		if err != nil {
			return err
		}
		defer dl.Close()
		decisions = dl
	}
	srv, err := egress.NewServer(egress.Config{Listen: o.Listen, Policy: policy, Log: decisions,
		Resolver: o.Resolver, Logger: o.Logger})
	if err != nil {
		return err
	}
	return serve(ctx, o, srv)
}

// serve listens, says where, and serves until ctx is done.
func serve(ctx context.Context, o Options, srv *egress.Server) error {
	ln, err := egress.Listen(ctx, o.Listen)
	if err != nil {
		return fmt.Errorf("egress broker listening on %s: %w", o.Listen, err)
	}
	if o.Listening != nil {
		o.Listening(ln.Addr())
	}
	return srv.Serve(ctx, ln)
}

// runBox serves a box until ctx is done: the policy comes from the box's
// config and approvals and follows their changes.
func runBox(ctx context.Context, o Options) error {
	l, logger := o.Layout, o.Logger
	if err := l.Ensure(); err != nil {
		return err
	}
	m, err := boxmeta.Read(l, o.Box)
	if err != nil {
		return err
	}
	bp, err := newBoxPolicy(l, o.Box, m.Project, o.Platform, o.ExtraRanges, logger)
	if err != nil {
		return err
	}
	policy, once, err := bp.load()
	if err != nil {
		return fmt.Errorf("egress policy of box %s: %w", o.Box, err)
	}
	decisionLog, err := egress.OpenLog(l.EgressLog(o.Box), o.Box, logger)
	if err != nil {
		return err
	}
	defer decisionLog.Close()
	auditLog, err := audit.Open(l.AuditLog())
	if err != nil {
		return err
	}
	defer auditLog.Close()
	decisions := newDenialAudit(decisionLog, auditLog.Record, o.Box, logger)
	// Credential use is evidence: counted and written to the audit log
	// every CredentialFlush and when the broker stops (deferred after the
	// audit log's Close, so it runs first).
	credLog := newCredAudit(decisionLog, auditLog.Record, o.Box, logger)
	flush := o.CredentialFlush
	if flush <= 0 {
		flush = credFlushInterval
	}
	credLog.start(flush)
	defer credLog.Close()
	creds, err := boxCredentials(o, bp, m, credLog)
	if err != nil {
		return err
	}
	var upstream *egress.UpstreamProxy
	bp.mu.Lock()
	cfg := bp.cfg
	bp.mu.Unlock()
	if cfg != nil {
		if upstream, err = upstreamProxy(o, cfg.Settings()); err != nil {
			return fmt.Errorf("egress of box %s: %w", o.Box, err)
		}
	}
	if upstream != nil {
		logger.Info("upstream proxy", "box", o.Box, "scheme", upstream.Scheme, "addr", upstream.Addr, "user_set", upstream.User != "")
	}
	inbox := newInbox(decisionLog, o.RequestHold)
	srv, err := egress.NewServer(egress.Config{Listen: o.Listen, Box: o.Box, Policy: policy,
		Log: decisions, Resolver: o.Resolver, Logger: logger,
		Credentials: creds.Broker(), SelfAddrs: selfAddrs(m.BrokerPort), HostPorts: limaSSHPorts(l.LimaHome()),
		Hold: bp.hold(), ConsumeOnce: bp.consumeOnce, Requests: inbox, Upstream: upstream})
	if err != nil {
		return err
	}
	srv.SetOnce(once)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// One mutex orders load and SetPolicy across the file watcher and the
	// expiry timer, so a policy read earlier is never applied over a newer
	// one (which could resurrect an expired approval).
	var mu sync.Mutex
	reload := func() (*egress.Policy, error) {
		mu.Lock()
		defer mu.Unlock()
		p, once, err := bp.load()
		if err == nil {
			srv.SetOnce(once)
			srv.SetHold(bp.hold())
			srv.SetPolicy(p)
			bp.settleDenied(inbox)
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
	if watchesGitNames(m, runtime.GOOS) {
		wg.Go(func() { watchGitNames(ctx, l, m, auditLog.Record, logger) })
	}
	// Guest connections under the host funnel arrive as fds passed by
	// `corral guest-conn` on the box's Unix socket (core/funnel).
	fdln, err := funnel.Listen(l.BrokerSocket(o.Box), logger)
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	wg.Go(func() { _ = srv.ServeBound(ctx, fdln) })
	// The box's sessions ask here which credential routes it serves.
	ctl, err := credential.ListenControl(l.BrokerControl(o.Box), creds, logger)
	if err != nil {
		cancel()
		wg.Wait()
		return err
	}
	wg.Go(func() { ctl.Serve(ctx) })
	err = serve(ctx, o, srv)
	cancel()
	wg.Wait()
	select {
	case werr := <-watchErr:
		return errors.Join(err, fmt.Errorf("egress broker of box %s stopped: %w", o.Box, werr))
	default:
	}
	return err
}

// limaSSHPorts returns Config.HostPorts for a box broker: the host ports of
// every box's SSH forward (corral's own sockets besides the brokers), read
// again at most every 30 s. They are looked up only for destinations on
// this host, which a box reaches only through an explicit range.
func limaSSHPorts(limaHome string) func() []int {
	var mu sync.Mutex
	var ports []int
	var at time.Time
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(at) > 30*time.Second {
			ports, at = lima.SSHPorts(limaHome), time.Now()
		}
		return ports
	}
}
