package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Resolver looks up the addresses of a host name. *net.Resolver implements
// it; tests use a fake that maps names to loopback.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// Defaults for zero [Config] fields.
const (
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultDialTimeout    = 10 * time.Second
	DefaultMaxHeaderBytes = 64 << 10
	DefaultMaxTunnels     = 2048
	DefaultShutdownGrace  = 5 * time.Second
	// DefaultResponseHeaderTimeout bounds the wait for an upstream's
	// response head. Generous: some APIs think before they answer.
	DefaultResponseHeaderTimeout = 2 * time.Minute
)

// Config configures a [Server]. Zero durations and limits take the Default
// values above.
type Config struct {
	// Listen is the address ListenAndServe listens on. It must be a loopback
	// IP with a port, such as 127.0.0.1:42123.
	Listen string
	// Box names the box, for the hint in denial messages.
	Box string
	// Policy is the initial policy; nil denies everything.
	Policy *Policy
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Log receives every decision; nil logs none.
	Log DecisionLogger
	// HeaderTimeout bounds reading a request head (slowloris defence).
	HeaderTimeout time.Duration
	// IdleTimeout closes keep-alive connections and tunnels on which nothing
	// moved for this long. A tunnel is closed after between one and two
	// IdleTimeouts of silence in both directions.
	IdleTimeout time.Duration
	// DialTimeout bounds resolving and connecting upstream.
	DialTimeout time.Duration
	// MaxHeaderBytes bounds a request head; larger heads get 431.
	MaxHeaderBytes int
	// ResponseHeaderTimeout bounds the wait for an upstream's response head
	// after the request was sent; the client then gets 502.
	ResponseHeaderTimeout time.Duration
	// MaxTunnels caps concurrent CONNECT tunnels; more get 503 at once. Zero
	// derives the cap from the open-file limit (see [TunnelCap]), after
	// raising the soft limit to the hard one.
	MaxTunnels int
	// ShutdownGrace is how long Serve lets connections finish after its
	// context is cancelled before it closes them.
	ShutdownGrace time.Duration
	// Logger receives operational logs (not decisions); nil discards them.
	Logger *slog.Logger
	// HostPorts, if set, names more ports of corral's own sockets on this
	// host (such as the Lima SSH forwards of boxes) that no box may reach
	// on any local address whatever its ranges allow. The broker's own
	// ports and the broker port range are always refused.
	HostPorts func() []int
	// Credentials, when set, serves the credential routes (see
	// [CredentialPrefix]) to origin-form requests and to absolute URIs
	// naming one of SelfAddrs.
	Credentials *CredentialBroker
	// Hold is how long a request denied by name or port is held, waiting
	// for an approval, before it is answered 403; 0 answers at once. See
	// [Server.SetHold].
	Hold time.Duration
	// MaxHeld caps the requests held at once; past it a denial is answered
	// at once. Zero means DefaultMaxHeld.
	MaxHeld int
	// ConsumeOnce uses up the once-approval of an entry (see [OnceRule])
	// and reports whether it did; a request is admitted by a once rule only
	// when it returns true. Nil admits nothing by once rules.
	ConsumeOnce func(entry string) bool
	// SelfAddrs are the broker's own addresses as the box sees them
	// ("192.168.5.4:PORT", "192.168.5.2:PORT", "127.0.0.1:PORT"): an
	// absolute-form credential request must name one of them (a client
	// that sends it through its proxy setting), and so must the Host
	// header of an origin-form one (DNS rebinding sends another name).
	SelfAddrs []string
	// Requests, when set, serves the request channel (see [RequestPath])
	// and holds connections to hosts the box asked for.
	Requests *RequestInbox
	// Upstream, when set, is the proxy allowed connections leave through
	// (tunnels, absolute-form requests and credential routes), after the
	// same decision and checks; see [UpstreamProxy].
	Upstream *UpstreamProxy
}

// Server is the egress proxy. Create it with [NewServer]; it is safe for
// concurrent use.
type Server struct {
	cfg       Config
	logger    *slog.Logger
	resolver  Resolver
	resolved  resolveCache
	dialer    net.Dialer
	transport *http.Transport
	// proxied is transport through Config.Upstream (nil without one).
	proxied *http.Transport
	// ctx is the parent of every upstream lookup, dial and request; it is
	// cancelled when Shutdown gives up waiting, so nothing upstream can
	// hold a handler past the grace period.
	ctx    context.Context
	cancel context.CancelFunc

	policy   atomic.Pointer[Policy]
	once     atomic.Pointer[[]OnceRule]
	hold     atomic.Int64 // time.Duration
	held     atomic.Int64
	maxHeld  int
	chMu     sync.Mutex
	ch       chan struct{} // closed on the next change (see changed)
	lastConn atomic.Int64  // unix nanoseconds
	tunnels  atomic.Int64
	// slots counts connections that hold an upstream descriptor: tunnels
	// and forwarded HTTP requests in flight. Both share MaxTunnels, so no
	// mix of them can run the broker out of descriptors.
	slots atomic.Int64
	// fdBudget is the number of descriptors connections may use (see
	// fdsUsedLocked) before track evicts the longest-waiting idle one and a
	// tunnel is answered 503; 0 disables both.
	fdBudget int
	// pipes are the splice pipes of tunnels, counted in the budget.
	pipes    *pipePool
	shutting atomic.Bool
	// workers run connection handlers and tunnel directions.
	workers *workers

	mu        sync.Mutex
	conns     map[*conn]struct{}
	listeners map[net.Listener]struct{}
	selfPorts map[int]struct{}        // ports the broker listens on
	local     map[netip.Addr]struct{} // the host's interface addresses
	localAt   time.Time               // when local was read
	wg        sync.WaitGroup
}

// NewServer validates cfg and returns a server.
func NewServer(cfg Config) (*Server, error) {
	var listenPort int
	if cfg.Listen != "" {
		ap, err := netip.ParseAddrPort(cfg.Listen)
		if err != nil || !ap.Addr().IsLoopback() {
			return nil, fmt.Errorf("egress broker listen address %q: must be a loopback IP and port such as 127.0.0.1:42000", cfg.Listen)
		}
		listenPort = int(ap.Port())
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = DefaultHeaderTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.MaxHeaderBytes <= 0 {
		cfg.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if cfg.ResponseHeaderTimeout <= 0 {
		cfg.ResponseHeaderTimeout = DefaultResponseHeaderTimeout
	}
	maxIdle := 256
	var soft uint64
	if cfg.MaxTunnels <= 0 {
		soft = RaiseFileLimit()
		cfg.MaxTunnels = TunnelCap(soft)
		maxIdle = min(maxIdle, max(cfg.MaxTunnels/8, 4))
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.MaxHeld <= 0 {
		cfg.MaxHeld = DefaultMaxHeld
	}
	s := &Server{
		pipes:     newPipePool(PipeCap(soft)),
		maxHeld:   cfg.MaxHeld,
		cfg:       cfg,
		logger:    cfg.Logger,
		resolver:  cfg.Resolver,
		conns:     map[*conn]struct{}{},
		listeners: map[net.Listener]struct{}{},
		selfPorts: map[int]struct{}{},
		local:     map[netip.Addr]struct{}{},
	}
	if listenPort != 0 {
		s.selfPorts[listenPort] = struct{}{}
	}
	if soft > fdReserve {
		s.fdBudget = int(min(soft, 1<<20)) - fdReserve/2
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.workers = newWorkers(s.ctx.Done())
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.dialer = net.Dialer{Timeout: cfg.DialTimeout, KeepAlive: 30 * time.Second}
	s.transport = &http.Transport{
		Proxy:                  nil, // never chain to the host's own proxy settings
		DialContext:            s.dialer.DialContext,
		MaxIdleConns:           maxIdle,
		ResponseHeaderTimeout:  cfg.ResponseHeaderTimeout,
		MaxIdleConnsPerHost:    16,
		IdleConnTimeout:        90 * time.Second,
		DisableCompression:     true, // pass Accept-Encoding and bodies through untouched
		MaxResponseHeaderBytes: 1 << 20,
	}
	if u := cfg.Upstream; u != nil {
		if (u.Scheme != ProxyHTTP && u.Scheme != ProxySOCKS5) || u.Addr == "" {
			return nil, fmt.Errorf("egress broker upstream proxy: scheme %q, address %q: want http or socks5 and host:port", u.Scheme, u.Addr)
		}
		s.proxied = u.forwardTransport(s.transport, &s.dialer)
	}
	if cfg.Credentials != nil {
		cfg.Credentials.policy = s.Policy
		cfg.Credentials.upstream = cfg.Upstream
	}
	if cfg.Requests != nil {
		cfg.Requests.setWake(s.broadcast)
	}
	p := cfg.Policy
	if p == nil {
		p, _ = ParsePolicy(nil, nil)
	}
	s.policy.Store(p)
	s.hold.Store(int64(max(cfg.Hold, 0)))
	return s, nil
}

// SetPolicy atomically replaces the policy. Requests already past their
// check and open tunnels are not affected.
func (s *Server) SetPolicy(p *Policy) {
	if p == nil {
		p, _ = ParsePolicy(nil, nil)
	}
	s.policy.Store(p)
	s.broadcast() // held requests check again
}

// Policy returns the current policy.
func (s *Server) Policy() *Policy { return s.policy.Load() }

// LastActivity is the time the last connection or request arrived (zero if
// none yet), for idle detection.
func (s *Server) LastActivity() time.Time {
	n := s.lastConn.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// OpenTunnels is the number of CONNECT tunnels open now.
func (s *Server) OpenTunnels() int { return int(s.tunnels.Load()) }

func (s *Server) touch() { s.lastConn.Store(time.Now().UnixNano()) }

// ListenAndServe listens on Config.Listen and serves until ctx is done.
func (s *Server) ListenAndServe(ctx context.Context) error {
	if s.cfg.Listen == "" {
		return errors.New("egress broker: no listen address configured")
	}
	ln, err := Listen(ctx, s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("egress broker listening on %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve accepts connections on ln until ctx is done, then stops gracefully:
// it stops accepting, closes idle connections, lets requests in flight
// finish for up to ShutdownGrace, closes what remains (tunnels included) and
// returns nil. A TCP listener must be on a loopback address.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.serveListener(ctx, ln, false)
}

// ServeBound is Serve for a listener whose connections come from the box
// itself: the host funnel's (core/funnel), each passed by the box's own
// qemu. Only their connections reach credential routes when the
// credential broker is BoundOnly.
func (s *Server) ServeBound(ctx context.Context, ln net.Listener) error {
	return s.serveListener(ctx, ln, true)
}

func (s *Server) serveListener(ctx context.Context, ln net.Listener, bound bool) error {
	if ta, ok := ln.Addr().(*net.TCPAddr); ok {
		ap := ta.AddrPort()
		if !ap.Addr().Unmap().IsLoopback() {
			ln.Close()
			return fmt.Errorf("egress broker: refusing to serve on non-loopback %s", ap)
		}
		s.mu.Lock()
		s.selfPorts[int(ap.Port())] = struct{}{}
		s.mu.Unlock()
	}
	s.mu.Lock()
	if s.shutting.Load() {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			ln.Close()
		case <-stop:
		}
	}()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || s.shutting.Load() {
				sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
				defer cancel()
				s.Shutdown(sctx) //nolint:errcheck // a forced close after the grace is the expected outcome
				return nil
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("egress broker accepting on %s: %w", ln.Addr(), err)
			}
			// EMFILE and friends: free a descriptor held by a connection
			// that sent nothing (the estimate in track can fall short),
			// and back off like net/http instead of spinning.
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				s.mu.Lock()
				s.evictIdleLocked(nil)
				s.mu.Unlock()
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), 100*time.Millisecond)
			s.logger.Warn("egress broker accept failed; retrying", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if !s.begin() {
			c.Close()
			continue
		}
		s.workers.run(func() {
			defer s.wg.Done()
			s.serve(c, bound)
		})
	}
}

// ServeConn serves one connection that was accepted elsewhere (for example a
// guest connection passed in as a file descriptor) and returns when it is
// closed. Splicing needs c to be a *net.TCPConn; other conns are copied
// through user space.
func (s *Server) ServeConn(c net.Conn) {
	if !s.begin() {
		c.Close()
		return
	}
	defer s.wg.Done()
	s.serve(c, false)
}

// begin registers a connection handler unless the server is shutting down.
// It holds mu so that no handler is added once Shutdown waits for them.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutting.Load() {
		return false
	}
	s.wg.Add(1)
	return true
}

// Shutdown stops the server: listeners are closed, idle connections closed
// at once, and active ones closed when they finish or when ctx is done,
// whichever is first. It returns ctx.Err() if it had to force connections
// closed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting.Store(true)
	for ln := range s.listeners {
		ln.Close()
	}
	clear(s.listeners)
	s.mu.Unlock()
	s.broadcast() // held requests are answered now
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for {
		if s.closeConns(false) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			s.cancel() // abort lookups, dials and requests upstream
			s.closeConns(true)
			err = ctx.Err()
		case <-tick.C:
			continue
		}
		break
	}
	s.wg.Wait()
	s.cancel()
	s.transport.CloseIdleConnections()
	if s.proxied != nil {
		s.proxied.CloseIdleConnections()
	}
	s.pipes.close()
	return err
}

// closeConns closes idle connections (all with force) and returns how many
// remain open.
func (s *Server) closeConns(force bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for c := range s.conns {
		if force || c.state.Load() == stateIdle {
			c.nc.Close()
		} else {
			n++
		}
	}
	return n
}

const (
	stateIdle int32 = iota
	stateActive
	stateTunnel
	// stateEvicted: track chose the connection to free its descriptor
	// while it waited for a request head (see evictIdleLocked).
	stateEvicted
)

type conn struct {
	nc    net.Conn
	state atomic.Int32
	// served is set once a request was read: an evicted connection that
	// never sent one is answered 503, a keep-alive one is closed.
	served atomic.Bool
	// waitSince is when the connection began waiting for a request head
	// (unix nanoseconds), for eviction (see track).
	waitSince atomic.Int64
}

// track adds or removes c. When descriptors run short (fdBudget, derived
// from RLIMIT_NOFILE), adding a connection first closes the one that has
// waited longest for a request head: a box that opens connections and sends
// nothing cannot take every descriptor and starve new requests, denials
// included, until its header timeouts expire.
func (s *Server) track(c *conn, add bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !add {
		delete(s.conns, c)
		return
	}
	s.conns[c] = struct{}{}
	if s.fdBudget <= 0 || s.fdsUsedLocked() < s.fdBudget {
		return
	}
	s.evictIdleLocked(c)
}

// fdsUsedLocked counts the descriptors connections hold: one per client
// connection (tracked, evicted ones until they are closed), one upstream
// socket per slot (a tunnel or a forwarded request; counted from before
// its dial), and two per splice pipe, in use or pooled. Caller holds mu.
func (s *Server) fdsUsedLocked() int {
	return len(s.conns) + int(s.slots.Load()) + s.pipes.fds()
}

// overBudget reports whether the descriptors in use exceed fdBudget.
func (s *Server) overBudget() bool {
	if s.fdBudget <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fdsUsedLocked() > s.fdBudget
}

// evictIdleLocked frees the connection (other than keep) that has waited
// longest for a request head, if any. One that has not sent a request yet
// is woken to answer 503 (serve does it), so that a client is never cut
// off without an answer; a keep-alive one is closed, as HTTP allows. The
// state moves from idle to evicted by compare-and-swap, so a connection
// whose head serve has just read is left alone. Caller holds mu.
func (s *Server) evictIdleLocked(keep *conn) {
	for {
		var oldest *conn
		for o := range s.conns {
			if o != keep && o.state.Load() == stateIdle && (oldest == nil || o.waitSince.Load() < oldest.waitSince.Load()) {
				oldest = o
			}
		}
		if oldest == nil {
			return
		}
		if !oldest.state.CompareAndSwap(stateIdle, stateEvicted) {
			continue // its head arrived meanwhile: pick again
		}
		if oldest.served.Load() {
			oldest.nc.Close()
		} else {
			oldest.nc.SetReadDeadline(aLongTimeAgo) //nolint:errcheck // wakes serve
		}
		return
	}
}

// answerEvicted answers a connection evicted before its first request
// 503 and closes it without a reset (its head may be unread).
func (s *Server) answerEvicted(c *conn, br *bufio.Reader) {
	if c.served.Load() {
		c.nc.Close()
		return
	}
	s.writeBusy(c.nc)
	lingerClose(c.nc, br)
}

// headLimit is an io.Reader that fails once n bytes were read, so a request
// head cannot grow without bound. It is lifted (n = max) for bodies.
type headLimit struct {
	r io.Reader
	n int64
}

var errHeadTooLarge = errors.New("request head too large")

func (l *headLimit) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

const noLimit = 1<<63 - 1

type connReader struct {
	lim headLimit
	br  *bufio.Reader
}

var readerPool = sync.Pool{New: func() any {
	cr := &connReader{}
	cr.br = bufio.NewReaderSize(&cr.lim, 4096)
	return cr
}}

func (s *Server) serve(nc net.Conn, bound bool) {
	s.touch()
	c := &conn{nc: nc}
	c.waitSince.Store(time.Now().UnixNano())
	c.state.Store(stateIdle) // waiting for its first request head
	s.track(c, true)
	defer s.track(c, false)
	cr := readerPool.Get().(*connReader)
	cr.lim.r = nc
	cr.br.Reset(&cr.lim)
	release := func() {
		if cr != nil {
			cr.lim.r = nil
			cr.br.Reset(&cr.lim)
			readerPool.Put(cr)
			cr = nil
		}
	}
	defer release()
	first := true
	for {
		if !first {
			c.waitSince.Store(time.Now().UnixNano())
			c.state.Store(stateIdle)
			nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout)) //nolint:errcheck
			if _, err := cr.br.Peek(1); err != nil || s.shutting.Load() || c.state.Load() == stateEvicted {
				nc.Close()
				return
			}
			s.touch()
		}
		first = false
		nc.SetReadDeadline(time.Now().Add(s.cfg.HeaderTimeout)) //nolint:errcheck
		cr.lim.n = int64(s.cfg.MaxHeaderBytes) + 4096           // slack as in net/http: the bufio buffer
		req, err := http.ReadRequest(cr.br)
		if c.state.Load() == stateEvicted || err == nil && !c.state.CompareAndSwap(stateIdle, stateActive) {
			s.answerEvicted(c, cr.br)
			return
		}
		if err != nil {
			switch {
			case cr.lim.n <= 0 || errors.Is(err, errHeadTooLarge):
				s.writeError(nc, http.StatusRequestHeaderFieldsTooLarge, "corral: request head too large\n")
			case errors.Is(err, io.EOF), isTimeout(err), errors.Is(err, net.ErrClosed):
				// client went away or was too slow: nothing to answer
			default:
				s.writeError(nc, http.StatusBadRequest, "corral: malformed request\n")
			}
			nc.Close()
			return
		}
		c.served.Store(true)
		cr.lim.n = noLimit
		nc.SetReadDeadline(time.Time{}) //nolint:errcheck
		if req.Method == http.MethodConnect && s.selfConnect(req) {
			// A client that sends everything through its proxy with CONNECT
			// (Gemini CLI's undici ProxyAgent, even for http://) reaches
			// the broker's own credential routes by tunnelling to the
			// broker itself: the tunnel is this same connection, served
			// on (same binding, same checks, Host included).
			if _, err := io.WriteString(nc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
				nc.Close()
				return
			}
			continue
		}
		if req.Method == http.MethodConnect {
			s.handleConnect(c, cr.br, req, release)
			return
		}
		if !s.handleHTTP(nc, cr.br, req, bound) || s.shutting.Load() {
			nc.Close()
			return
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// target is the outcome of checking a request: the decision and, if it is
// allowed, the checked addresses to dial in order.
type target struct {
	auth Authority
	d    Decision
	ips  []netip.Addr
}

// check parses nothing: it takes a parsed authority, checks the name, then
// resolves once and checks every address. Only addresses that passed are
// returned, and only they may be dialled.
func (s *Server) check(ctx context.Context, kind Kind, auth Authority) target {
	return s.checkWith(ctx, s.policy.Load(), kind, auth)
}

// checkWith is check against pol.
func (s *Server) checkWith(ctx context.Context, pol *Policy, kind Kind, auth Authority) target {
	t := target{auth: auth}
	t.d = pol.Decide(Request{Kind: kind, Host: auth.Host, Port: auth.Port})
	t.d.Time = time.Now()
	if !t.d.Allowed {
		return t
	}
	var addrs []netip.Addr
	if auth.IP.IsValid() {
		addrs = []netip.Addr{auth.IP}
	} else if addrs = s.resolved.lookup(ctx, s.resolver, s.cfg.DialTimeout, auth.Host); addrs == nil {
		t.d.Allowed, t.d.Reason = false, ReasonResolveFailed
		return t
	}
	var firstDenied Decision
	for _, ip := range addrs {
		d := pol.Decide(Request{Kind: kind, Host: auth.Host, Port: auth.Port, IP: ip})
		if d.Allowed && s.refusedLocal(ip, auth.Port) {
			d.Allowed, d.Reason = false, ReasonSelf
		}
		if d.Allowed {
			t.ips = append(t.ips, ip)
		} else if firstDenied.Reason == "" {
			firstDenied = d
		}
	}
	if len(t.ips) == 0 {
		t.d = firstDenied
		if t.d.Reason == "" {
			t.d.Reason = ReasonResolveFailed
		}
		t.d.Time = time.Now()
		return t
	}
	t.d.IP = t.ips[0]
	return t
}

// refusedLocal reports whether ip:port is on this host and is a socket no
// box may reach whatever its ranges allow: the broker itself (its listen
// port on any local address: 127.0.0.1, 0.0.0.0, [::], v4-mapped forms, an
// interface address), any corral broker port (another box's broker would
// egress under that box's allow-list), and the ports Config.HostPorts names.
func (s *Server) refusedLocal(ip netip.Addr, port int) bool {
	ip = ip.Unmap()
	if !s.isLocal(ip) {
		return false
	}
	if IsBrokerPort(port) {
		return true
	}
	s.mu.Lock()
	_, self := s.selfPorts[port]
	s.mu.Unlock()
	if self {
		return true
	}
	if s.cfg.HostPorts != nil {
		for _, p := range s.cfg.HostPorts() {
			if p == port {
				return true
			}
		}
	}
	return s.isUpstreamProxy(ip, port)
}

// isLocal reports whether a connection to ip ends on this host: loopback,
// unspecified and "this network" addresses (the kernel sends them to the
// host itself) and the addresses of the host's interfaces, read at most
// every localAddrTTL.
func (s *Server) isLocal(ip netip.Addr) bool {
	if ip.IsLoopback() || ip.IsUnspecified() || thisNetwork.Contains(ip) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if time.Since(s.localAt) > localAddrTTL {
		s.localAt = time.Now()
		clear(s.local)
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if pfx, err := netip.ParsePrefix(a.String()); err == nil {
					s.local[pfx.Addr().Unmap().WithZone("")] = struct{}{}
				}
			}
		}
	}
	_, ok := s.local[ip.WithZone("")]
	return ok
}

const localAddrTTL = 30 * time.Second

var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

func (s *Server) logDecision(d Decision) {
	if s.cfg.Log != nil {
		s.cfg.Log.LogDecision(d)
	}
}

// authorityDecision records a request whose target did not even parse.
func authorityDecision(kind Kind, raw string, err error) Decision {
	reason := ReasonMalformedAuthority
	var ae *AuthorityError
	if errors.As(err, &ae) {
		reason = ae.Reason
	}
	if len(raw) > 255 {
		raw = raw[:255]
	}
	return Decision{Time: time.Now(), Kind: kind, Host: raw, Reason: reason}
}

// denyBody is the text a denied client sees. The client is a program in
// the box (most often an agent), which cannot run corral: the first line
// after the denial is what it can do, corral-request (guest/corral-request.sh,
// in every broker box), then what the user can do on the host.
func (s *Server) denyBody(t target) string {
	box := s.cfg.Box
	if box == "" {
		box = "BOX"
	}
	dest := t.auth.String()
	msg := "corral: egress to " + dest + " denied (" + string(t.d.Reason) + ")\n"
	ask := func(entry string) string {
		return "to ask the user for it from inside the box: corral-request " + entry + ` --why "what it is for"` + "\n" +
			"  (then retry the same command: it waits up to a minute for the answer; do not try other hosts to get around a refusal)\n" +
			"the user can allow it on the host: corral allow " + box + " " + entry + "\n"
	}
	switch t.d.Reason {
	case ReasonHostNotAllowed:
		msg += ask(t.auth.Host)
	case ReasonPortNotAllowed:
		msg += ask(t.auth.Host + ":" + strconv.Itoa(t.auth.Port))
	case ReasonIPLiteral, ReasonPrivateIP:
		msg += "private and IP-literal destinations need an explicitly allowed address range\n"
	case ReasonSelf:
		msg += "that is the egress broker itself or another corral socket on this host; no range opens it\n"
	}
	return msg
}

func (s *Server) writeDenied(nc net.Conn, t target) {
	status := http.StatusForbidden
	if t.d.Reason == ReasonResolveFailed {
		status = http.StatusBadGateway
	}
	s.writeError(nc, status, s.denyBody(t), "X-Corral-Egress-Reason", string(t.d.Reason))
}

// writeError writes a complete "Connection: close" response with a text
// body. extra holds header name/value pairs.
func (s *Server) writeError(nc net.Conn, status int, body string, extra ...string) {
	b := make([]byte, 0, 256+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	for i := 0; i+1 < len(extra); i += 2 {
		b = append(b, "\r\n"...)
		b = append(b, extra[i]...)
		b = append(b, ": "...)
		b = append(b, extra[i+1]...)
	}
	b = append(b, "\r\n\r\n"...)
	b = append(b, body...)
	nc.SetWriteDeadline(time.Now().Add(s.cfg.HeaderTimeout)) //nolint:errcheck
	nc.Write(b)                                              //nolint:errcheck // the connection is closed next either way
	nc.SetWriteDeadline(time.Time{})                         //nolint:errcheck
}

// lingerClose closes a connection whose client may still be sending (a
// request body we did not read): closing with unread data makes the kernel
// send RST, which can destroy the response before the client reads it.
func lingerClose(nc net.Conn, br *bufio.Reader) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()                                            //nolint:errcheck
		nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond)) //nolint:errcheck
		io.CopyN(io.Discard, br, 256<<10)                          //nolint:errcheck
	}
	nc.Close()
}

func (s *Server) handleConnect(c *conn, br *bufio.Reader, req *http.Request, release func()) {
	nc := c.nc
	auth, err := ParseAuthority(req.RequestURI, 0)
	if err != nil {
		s.logDecision(authorityDecision(KindConnect, req.RequestURI, err))
		s.writeError(nc, http.StatusBadRequest, "corral: bad CONNECT target: "+err.Error()+"\n")
		nc.Close()
		return
	}
	t := s.admit(KindConnect, auth, ProxySession(req.Header))
	if !t.d.Allowed {
		s.writeDenied(nc, t)
		if br.Buffered() > 0 {
			lingerClose(nc, br)
		} else {
			nc.Close()
		}
		return
	}
	if !s.takeSlot() {
		s.logger.Warn("egress tunnel limit reached", "limit", s.cfg.MaxTunnels, "host", auth.Host)
		s.writeBusy(nc)
		nc.Close()
		return
	}
	defer s.slots.Add(-1)
	// The slot counts the upstream socket before it exists: past the
	// descriptor budget the client gets 503 now, not a failed dial.
	if s.overBudget() {
		s.logger.Warn("egress descriptor budget reached", "budget", s.fdBudget, "host", auth.Host)
		s.writeBusy(nc)
		nc.Close()
		return
	}
	s.tunnels.Add(1)
	defer s.tunnels.Add(-1)
	up, err := s.dial(t)
	if err != nil && outOfFiles(err) {
		s.logger.Warn("egress dial out of descriptors", "host", auth.Host, "err", err)
		s.writeBusy(nc)
		nc.Close()
		return
	}
	if pe := (*ProxyError)(nil); errors.As(err, &pe) {
		s.writeProxyFailure(nc, t, KindConnect, pe)
		nc.Close()
		return
	}
	if err != nil {
		s.writeError(nc, http.StatusBadGateway, "corral: connecting to "+auth.String()+": "+err.Error()+"\n")
		nc.Close()
		return
	}
	c.state.Store(stateTunnel)
	if _, err := io.WriteString(nc, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		nc.Close()
		return
	}
	// The client's first bytes (some may already be buffered after the
	// CONNECT head) are read and checked before they go upstream: a TLS
	// server name must be the CONNECT host (see inspectHello).
	s.tunnel(nc, up, func(ts *tunnelState) bool { return s.inspectHello(ts, br, t, release) })
}

// takeSlot takes an upstream slot, or reports that all MaxTunnels are
// taken. The caller gives it back with s.slots.Add(-1).
func (s *Server) takeSlot() bool {
	if s.slots.Add(1) > int64(s.cfg.MaxTunnels) {
		s.slots.Add(-1)
		return false
	}
	return true
}

// writeBusy answers a client past the cap at once.
func (s *Server) writeBusy(nc net.Conn) {
	s.writeError(nc, http.StatusServiceUnavailable, fmt.Sprintf(
		"corral: too many open tunnels (limit %d); close some connections and retry\n", s.cfg.MaxTunnels))
}

// outOfFiles reports whether err is the process or the system running out
// of descriptors: the broker is busy, which is 503, not the upstream's
// failure (502).
func outOfFiles(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}

// dial connects to the first checked address that answers, through the
// upstream proxy unless its no_proxy list names the destination. When
// every address failed and the proxy was asked for one, the proxy's
// answer is the error.
func (s *Server) dial(t target) (net.Conn, error) {
	var errs []error
	var proxyErr error
	for _, ip := range t.ips {
		ap := netip.AddrPortFrom(ip, uint16(t.auth.Port))
		var c net.Conn
		var err error
		if s.cfg.Upstream.via(t.auth.Host, ip) {
			c, err = s.cfg.Upstream.dial(s.ctx, &s.dialer, ap)
			if err != nil && proxyErr == nil {
				proxyErr = err
			}
		} else {
			c, err = s.dialer.DialContext(s.ctx, "tcp", ap.String())
		}
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if proxyErr != nil {
		return nil, proxyErr
	}
	return nil, errors.Join(errs...)
}
