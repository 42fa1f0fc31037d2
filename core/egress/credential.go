package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The credential broker: a reverse proxy inside the egress broker that
// holds secrets the box never sees. A box reaches it at
// http://BROKER/corral/credential/TOKEN/NAME/..., in plain HTTP inside the
// host funnel (with or without its proxy variables: an origin-form request
// and an absolute-form one addressed to the broker itself are the same).
// The broker drops every credential header the box sent, adds the real
// one, and forwards over TLS with certificate verification to the
// configured upstream. The box can use a credential through its broker,
// but never read it.
//
// A route answers only its own box. TOKEN is 256 random bits the broker
// issued to one session of its box ([CredentialBroker.NewToken], asked
// over the broker's private Unix socket by core/credential); it is
// compared in constant time and never logged. Where the host funnel
// exists (qemu), the routes also answer only connections that came
// through it ([Server.ServeBound], CredentialConfig.BoundOnly), so no other
// process on the host reaches them even with the token. An origin-form
// request must name the broker itself in its Host header (SelfAddrs), so
// that a web page in a browser on the host cannot reach the routes by DNS
// rebinding. Every refusal is logged (aggregated by the caller's logger)
// without the request's text.

// CredentialPrefix starts the path of every credential request.
const CredentialPrefix = "/corral/credential/"

// KindCredential is the log kind of a brokered credential request.
const KindCredential Kind = "credential"

// CredentialHeader says how the secret is sent upstream.
type CredentialHeader string

// Credential headers.
const (
	// HeaderAPIKey sends "x-api-key: SECRET" (Anthropic API keys).
	HeaderAPIKey CredentialHeader = "x-api-key"
	// HeaderAuthorization sends "Authorization: Bearer SECRET" (OAuth
	// tokens).
	HeaderAuthorization CredentialHeader = "authorization"
	// HeaderBasic sends "Authorization: Basic base64(x-access-token:SECRET)",
	// what https git hosts accept for a token.
	HeaderBasic CredentialHeader = "basic"
	// HeaderGoogAPIKey sends "x-goog-api-key: SECRET" (Gemini API keys, as
	// Gemini CLI sends them).
	HeaderGoogAPIKey CredentialHeader = "x-goog-api-key"
)

// CredentialHeaders lists the valid headers.
var CredentialHeaders = []CredentialHeader{HeaderAPIKey, HeaderAuthorization, HeaderBasic, HeaderGoogAPIKey}

// strippedHeaders are never forwarded from the box to a credential
// upstream: whatever the box sends there is at best a placeholder.
var strippedHeaders = []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Proxy-Authorization", "Cookie"}

// CredentialRefusal says why the broker refused a credential request
// before it reached a credential ("" when it did not).
type CredentialRefusal string

// Refusals. None of them logs what the request said: a box can send
// anything, and the token must never reach a log.
const (
	// RefusedUnbound: the routes answer only connections through the host
	// funnel, and this one came over loopback TCP.
	RefusedUnbound CredentialRefusal = "unbound"
	// RefusedHost: an origin-form request whose Host is not the broker.
	RefusedHost CredentialRefusal = "foreign-host"
	// RefusedToken: no token, a malformed one, or one this broker did not
	// issue (another box's, a stale one).
	RefusedToken CredentialRefusal = "token"
	// RefusedPath: a path that could climb out of the upstream's base.
	RefusedPath CredentialRefusal = "path"
	// RefusedUnknown: a valid token, but no such credential in this broker.
	RefusedUnknown CredentialRefusal = "unknown-credential"
)

// TokenLen is the length of a route token: 32 random bytes in hex.
const TokenLen = 64

// maxTokens bounds the tokens a broker remembers (one per session of its
// box); past it the oldest is forgotten. Only the user's own sessions
// create tokens, over the broker's private socket.
const maxTokens = 4096

// SecretFunc returns a credential's value. It is called per request (the
// caller may cache) and its errors must not contain the value.
type SecretFunc func(ctx context.Context) (string, error)

// Credential is one brokered credential.
type Credential struct {
	// Name is the NAME of [credentials.NAME] and of the path segment.
	Name string
	// Upstream is an https URL: scheme, host, optional port and base path.
	Upstream string
	Header   CredentialHeader
	Secret   SecretFunc
	// RootCAs, when set, replaces the system roots for this upstream (a
	// private CA, or a test CA). Verification is never turned off.
	RootCAs *x509.CertPool
	// Rules, when set, narrow the requests the credential serves (see
	// [CredentialRules]).
	Rules *CredentialRules
	// Relayed makes the credential relayed (see [Relay]): this broker
	// holds no secret for it (Secret, Header and RootCAs are unset) and
	// sends each request it admits to the relay of the request's session
	// ([CredentialBroker.NewRelayToken]); a session without one is refused.
	Relayed bool
}

var credNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// ValidCredentialName reports whether name can name a credential (it is a
// path segment and a config key).
func ValidCredentialName(name string) bool { return credNameRe().MatchString(name) }

// ParseUpstream checks a credential upstream: https, a host, no userinfo,
// query or fragment. It returns the URL with any trailing "/" removed from
// its path.
func ParseUpstream(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("upstream %q: %w", s, err)
	case u.Scheme != "https":
		return nil, fmt.Errorf("upstream %q: must be an https:// URL (the broker speaks TLS upstream)", s)
	case u.User != nil:
		return nil, fmt.Errorf("upstream %q: userinfo is not allowed (the secret comes from the keychain or the host environment)", s)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("upstream %q: no host", s)
	case u.RawQuery != "" || u.Fragment != "" || u.Opaque != "":
		return nil, fmt.Errorf("upstream %q: no query or fragment allowed", s)
	}
	if _, err := ParseAuthority(u.Host, 443); err != nil {
		return nil, fmt.Errorf("upstream %q: %w", s, err)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

// CredentialEvent is one brokered request, as logged: never the value,
// the token, the path or the query.
type CredentialEvent struct {
	Time time.Time
	// Name is the credential; "" when the request was refused before its
	// token was checked (the name a box sent then is not logged).
	Name string
	// Session is the session the token was issued to; "" when refused
	// before the token was checked.
	Session  string
	Upstream string // host[:port]
	Method   string
	// Class is the request's path class ([PathClass]), never the path.
	Class   string
	Status  int   // what the box got: the upstream's status, or the broker's own 4xx/5xx
	Bytes   int64 // response body bytes relayed to the box
	Err     string
	Refusal CredentialRefusal
}

// CredentialLogger receives one event per brokered request. It must be
// safe for concurrent use.
type CredentialLogger interface {
	LogCredential(CredentialEvent)
}

type credential struct {
	Credential
	upstream  *url.URL
	auth      Authority
	transport *http.Transport
}

// CredentialBroker serves the credential routes of an egress [Server] (see
// Config.Credentials). Create it with [NewCredentialBroker].
type CredentialBroker struct {
	resolver  Resolver
	policy    func() *Policy
	upstream  *UpstreamProxy // the server's Config.Upstream
	log       CredentialLogger
	logger    *slog.Logger
	timeout   time.Duration
	boundOnly bool
	requests  atomic.Int64

	mu     sync.RWMutex
	creds  map[string]*credential
	tokens map[[sha256.Size]byte]tokenEntry // sha256(token) -> its session
	order  [][sha256.Size]byte              // issue order, for maxTokens
}

// CredentialConfig configures a [CredentialBroker].
type CredentialConfig struct {
	Credentials []Credential
	// Resolver resolves upstream names; nil uses the system resolver.
	Resolver Resolver
	// Log gets one event per request; nil logs none.
	Log CredentialLogger
	// Logger gets operational messages; nil discards them.
	Logger *slog.Logger
	// DialTimeout bounds resolving and connecting; 0 is DefaultDialTimeout.
	DialTimeout time.Duration
	// BoundOnly answers the routes only on connections served with
	// [Server.ServeBound] (the host funnel's, which come from the box's
	// own qemu); loopback TCP connections are refused.
	BoundOnly bool
}

// NewCredentialBroker validates the credentials.
func NewCredentialBroker(cfg CredentialConfig) (*CredentialBroker, error) {
	b := &CredentialBroker{creds: map[string]*credential{}, tokens: map[[sha256.Size]byte]tokenEntry{},
		resolver: cfg.Resolver, log: cfg.Log, logger: cfg.Logger, timeout: cfg.DialTimeout, boundOnly: cfg.BoundOnly}
	if b.resolver == nil {
		b.resolver = net.DefaultResolver
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	if b.timeout <= 0 {
		b.timeout = DefaultDialTimeout
	}
	var errs []error
	for _, c := range cfg.Credentials {
		errs = append(errs, b.Add(c))
	}
	return b, errors.Join(errs...)
}

// Add validates c and serves it from now on. A credential supplied by a
// session (core/credential) is added while the broker runs; a name is
// never replaced.
func (b *CredentialBroker) Add(c Credential) error {
	if !ValidCredentialName(c.Name) {
		return fmt.Errorf("credential %q: not a valid name (lowercase letters, digits, - and _)", c.Name)
	}
	u, err := ParseUpstream(c.Upstream)
	if err != nil {
		return fmt.Errorf("credential %q: %w", c.Name, err)
	}
	auth, _ := ParseAuthority(u.Host, 443)
	if c.Relayed {
		// Relayed: this broker holds nothing to inject.
		if c.Secret != nil || c.Header != "" || c.RootCAs != nil {
			return fmt.Errorf("credential %q: a relayed credential has no secret, header or CA here", c.Name)
		}
	} else {
		switch c.Header {
		case HeaderAPIKey, HeaderAuthorization, HeaderBasic, HeaderGoogAPIKey:
		default:
			return fmt.Errorf("credential %q: header %q: use one of x-api-key, authorization, basic, x-goog-api-key", c.Name, c.Header)
		}
		if c.Secret == nil {
			return fmt.Errorf("credential %q: no secret source", c.Name)
		}
	}
	if err := c.Rules.Validate(); err != nil {
		return fmt.Errorf("credential %q: rules: %w", c.Name, err)
	}
	cr := &credential{Credential: c, upstream: u, auth: auth}
	if !c.Relayed {
		timeout := b.timeout
		dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
		cr.transport = &http.Transport{
			Proxy: nil, // never the host's own proxy settings
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return b.dial(ctx, dialer, cr.auth)
			},
			TLSClientConfig: &tls.Config{
				RootCAs:    c.RootCAs, // nil: the system roots
				ServerName: auth.Host,
				MinVersion: tls.VersionTLS12,
			},
			ForceAttemptHTTP2:      true,
			MaxIdleConnsPerHost:    8,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    timeout,
			DisableCompression:     true,
			MaxResponseHeaderBytes: 1 << 20,
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, dup := b.creds[c.Name]; dup {
		return fmt.Errorf("credential %q: defined twice", c.Name)
	}
	b.creds[c.Name] = cr
	return nil
}

// Names lists the credentials served, sorted.
func (b *CredentialBroker) Names() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]string, 0, len(b.creds))
	for n := range b.creds {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Has reports whether the broker serves credential name.
func (b *CredentialBroker) Has(name string) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.creds[name] != nil
}

// tokenEntry is what a route token opens: its session, and the session's
// relay when the session came from a laptop that relays credentials.
type tokenEntry struct {
	session string
	relay   *sessionRelay
}

// sessionRelay is a session's relay with its transport.
type sessionRelay struct {
	Relay
	transport *http.Transport
}

// NewToken issues a route token to session: 256 random bits, in hex. Only
// the tokens issued by this broker open its routes; another box's broker
// has its own. The broker keeps only the token's hash.
func (b *CredentialBroker) NewToken(session string) (string, error) {
	return b.newToken(tokenEntry{session: session})
}

// NewRelayToken issues a route token to a session that brings a relay:
// its requests for relayed credentials go there.
func (b *CredentialBroker) NewRelayToken(session string, r Relay) (string, error) {
	if err := r.validate(); err != nil {
		return "", fmt.Errorf("session %s: %w", truncate(session, 64), err)
	}
	return b.newToken(tokenEntry{session: session, relay: &sessionRelay{Relay: r, transport: relayTransport(r.Socket, b.timeout)}})
}

func (b *CredentialBroker) newToken(e tokenEntry) (string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("issuing a credential route token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	h := sha256.Sum256([]byte(tok))
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.order) >= maxTokens {
		if old := b.tokens[b.order[0]].relay; old != nil {
			old.transport.CloseIdleConnections()
		}
		delete(b.tokens, b.order[0])
		b.order = b.order[1:]
	}
	b.tokens[h] = e
	b.order = append(b.order, h)
	return tok, nil
}

// session returns the session a presented token was issued to. The token
// is looked up by its hash, so the lookup's timing says nothing about the
// token, and the match is confirmed in constant time.
func (b *CredentialBroker) session(tok string) (tokenEntry, bool) {
	if len(tok) != TokenLen {
		return tokenEntry{}, false
	}
	h := sha256.Sum256([]byte(tok))
	b.mu.RLock()
	s, ok := b.tokens[h]
	b.mu.RUnlock()
	if !ok {
		return tokenEntry{}, false
	}
	for _, k := range b.order {
		if subtle.ConstantTimeCompare(k[:], h[:]) == 1 {
			return s, true
		}
	}
	return tokenEntry{}, false
}

func (b *CredentialBroker) lookup(name string) *credential {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.creds[name]
}

// dial connects to an upstream: an IP literal in the trusted config is
// dialled as written; a name is resolved once and only public addresses
// (or addresses in the box's explicitly allowed ranges) are dialled.
func (b *CredentialBroker) dial(ctx context.Context, d *net.Dialer, a Authority) (net.Conn, error) {
	if a.IP.IsValid() {
		return b.dialAddr(ctx, d, a.Host, netip.AddrPortFrom(a.IP, uint16(a.Port)))
	}
	res, err := b.resolver.LookupIPAddr(ctx, a.Host)
	if err != nil {
		return nil, fmt.Errorf("resolving %s: %w", a.Host, err)
	}
	var pol *Policy
	if b.policy != nil {
		pol = b.policy()
	}
	var errs []error
	for _, r := range res {
		ip, ok := netip.AddrFromSlice(r.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		if !PublicAddr(ip) && (pol == nil || !pol.inRange(ip)) {
			errs = append(errs, fmt.Errorf("%s resolves to non-public %s", a.Host, ip))
			continue
		}
		c, err := b.dialAddr(ctx, d, a.Host, netip.AddrPortFrom(ip, uint16(a.Port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("resolving %s: no addresses", a.Host)
	}
	return nil, errors.Join(errs...)
}

// dialAddr dials a checked address of an upstream, through the upstream
// proxy unless its no_proxy list names host.
func (b *CredentialBroker) dialAddr(ctx context.Context, d *net.Dialer, host string, ap netip.AddrPort) (net.Conn, error) {
	if b.upstream.via(host, ap.Addr()) {
		return b.upstream.dial(ctx, d, ap)
	}
	return d.DialContext(ctx, "tcp", ap.String())
}

// credentialPath splits "/corral/credential/TOKEN/NAME/REST" into the
// token, the credential and REST (with its leading "/") in its canonical
// reading (canonicalPath): decoded once (dec) and as the broker forwards
// it (escaped). A path that could climb out of the upstream's base path,
// or that another server could read otherwise, is an error.
func credentialPath(raw string) (token, name, dec, escaped string, err error) {
	tail, ok := strings.CutPrefix(raw, CredentialPrefix)
	if !ok {
		return "", "", "", "", errors.New("not a credential path")
	}
	token, tail, _ = strings.Cut(tail, "/")
	name, dec, escaped, err = credentialRest(tail)
	return token, name, dec, escaped, err
}

func credentialRest(tail string) (name, dec, escaped string, err error) {
	name, rest, _ := strings.Cut(tail, "/")
	dec, escaped, err = canonicalPath("/" + rest)
	return name, dec, escaped, err
}

// isCredentialRequest reports whether req is addressed to the broker's
// credential routes: origin-form ("POST /corral/credential/...") or an
// absolute URI naming one of the broker's own addresses (what a client
// that honours HTTP_PROXY sends for an http:// base URL pointing at the
// broker).
func (s *Server) isCredentialRequest(req *http.Request) bool {
	if s.cfg.Credentials == nil || !strings.HasPrefix(req.URL.EscapedPath(), CredentialPrefix) {
		return false
	}
	if req.URL.Scheme == "" && req.URL.Host == "" {
		return true
	}
	if req.URL.Scheme != "http" {
		return false
	}
	for _, h := range s.cfg.SelfAddrs {
		if strings.EqualFold(req.URL.Host, h) {
			return true
		}
	}
	return false
}

// selfConnect reports whether a CONNECT names the broker itself (as its box
// reaches it) while it serves credential routes.
func (s *Server) selfConnect(req *http.Request) bool {
	return s.cfg.Credentials != nil && s.selfHost(req.RequestURI)
}

// selfHost reports whether host (a request's Host header) names the
// broker as its box reaches it.
func (s *Server) selfHost(host string) bool {
	for _, h := range s.cfg.SelfAddrs {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// handleCredential forwards one credential request and reports whether the
// connection may carry another one. bound is set for a connection that
// came through the host funnel.
func (s *Server) handleCredential(nc net.Conn, br *bufio.Reader, req *http.Request, bound bool) bool {
	b := s.cfg.Credentials
	b.requests.Add(1)
	ev := CredentialEvent{Time: time.Now(), Method: methodClass(req.Method)}
	fail := func(status int, msg string) bool {
		ev.Status, ev.Err = status, msg
		b.logEvent(ev)
		s.writeError(nc, status, "corral: "+msg+"\n", "X-Corral-Credential-Error", strconv.Itoa(status))
		if req.ContentLength != 0 || br.Buffered() > 0 {
			lingerClose(nc, br)
		}
		return false
	}
	refuse := func(r CredentialRefusal, status int, msg string) bool {
		ev.Refusal = r
		return fail(status, msg)
	}
	switch {
	case b.boundOnly && !bound:
		return refuse(RefusedUnbound, http.StatusForbidden, "credential routes answer only the box's own connections")
	case req.URL.Host == "" && !s.selfHost(req.Host):
		return refuse(RefusedHost, http.StatusForbidden, "credential request: the Host header does not name this broker")
	}
	cont := func() error {
		_, err := io.WriteString(nc, "HTTP/1.1 100 Continue\r\n\r\n")
		return err
	}
	c, rest, relay, rf := b.admit(&ev, req, cont)
	if rf.status != 0 {
		if rf.refusal != "" {
			return refuse(rf.refusal, rf.status, rf.msg)
		}
		return fail(rf.status, rf.msg)
	}
	out, rt, rf := b.outbound(c, relay, req, rest)
	if rf.status != 0 {
		return fail(rf.status, rf.msg)
	}
	keep, res := s.exchange(nc, br, req, out, rt, "credential "+c.Name+" upstream "+ev.Upstream)
	ev.Status, ev.Bytes, ev.Err = res.status, res.bytes, res.err
	b.logEvent(ev)
	return keep
}

// refusal is why admit refused a request: the status the box gets, the
// message, and the refusal kind ("" for a failure that is no refusal).
type refusal struct {
	refusal CredentialRefusal
	status  int
	msg     string
}

// admit runs the checks every credential request passes, in this order,
// for the broker's own routes and for the laptop's relay alike: the
// route token (which names the session), the path's canonical reading
// (canonicalPath: below the upstream's base, no form another server reads
// otherwise), the credential, and its rules on the canonical request
// (readCanonical), with the body read whole and judged when the rules
// must see it (cont: see readJudgedBody). It fills ev as far as it got;
// the request's text never reaches ev. On success it returns the
// credential, the upstream path REST as it is forwarded (the canonical
// path, escaped) and the session's relay (nil when the session has none).
func (b *CredentialBroker) admit(ev *CredentialEvent, req *http.Request, cont func() error) (*credential, string, *sessionRelay, refusal) {
	tok, name, dec, rest, err := credentialPath(req.URL.EscapedPath())
	entry, ok := b.session(tok)
	if !ok {
		return nil, "", nil, refusal{RefusedToken, http.StatusForbidden, "credential request: no valid route token (a session gets its base URLs from corral; start a new session)"}
	}
	ev.Session = entry.session
	if err != nil {
		return nil, "", nil, refusal{RefusedPath, http.StatusBadRequest, "credential request: " + err.Error()}
	}
	ev.Class = PathClass(rest, req.URL.RawQuery)
	c := b.lookup(name)
	if c == nil {
		if ValidCredentialName(name) {
			ev.Name = name
		}
		return nil, "", nil, refusal{RefusedUnknown, http.StatusNotFound, fmt.Sprintf("no credential %q in this box's broker (configure [credentials.%s] in a trusted config; "+
			"an agent's key must be set on the host where the box's broker or the session starts)", truncate(ev.Name, 64), truncate(ev.Name, 64))}
	}
	ev.Name = name
	ev.Upstream = c.auth.String()
	why, check := c.Rules.permit(readCanonical(req, dec, rest))
	if why != "" {
		return nil, "", nil, ruleRefusal(name, why)
	}
	if check != bodyAsIs {
		if rf := readJudgedBody(req, check, cont); rf.status != 0 {
			if rf.refusal == RefusedRule {
				rf.msg = ruleRefusal(name, rf.msg).msg // its status stays: 413 for a body too large to judge
			}
			return nil, "", nil, rf
		}
	}
	return c, rest, entry.relay, refusal{}
}

func ruleRefusal(name, why string) refusal {
	return refusal{RefusedRule, http.StatusForbidden, fmt.Sprintf("credential %q refuses this request: %s (its rules are in the trusted config, [credentials.%s])", name, why, name)}
}

// readJudgedBody reads a body the rules must see (MaxJudgedBody at most),
// judges it, and on success puts the bytes judged back as the request's
// body with their length, so that what is forwarded is what was judged.
// cont, when set, is called first: a client that sent "Expect:
// 100-continue" sends the body only after it.
func readJudgedBody(req *http.Request, check bodyCheck, cont func() error) refusal {
	if req.ContentLength > MaxJudgedBody {
		return refusal{RefusedRule, http.StatusRequestEntityTooLarge, fmt.Sprintf("a body the rules must read is larger than %d bytes and cannot be judged", MaxJudgedBody)}
	}
	if cont != nil && strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		if err := cont(); err != nil {
			return refusal{status: http.StatusBadRequest, msg: "credential request: the client went away"}
		}
	}
	req.Header.Del("Expect")
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(req.Body, MaxJudgedBody+1))
		if err != nil {
			return refusal{status: http.StatusBadRequest, msg: "credential request: reading the body: the client went away or sent a bad body"}
		}
	}
	if len(body) > MaxJudgedBody {
		return refusal{RefusedRule, http.StatusRequestEntityTooLarge, fmt.Sprintf("a body the rules must read is larger than %d bytes and cannot be judged", MaxJudgedBody)}
	}
	if why := judgeBody(check, req.Header, body); why != "" {
		return refusal{RefusedRule, http.StatusForbidden, why}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.TransferEncoding = nil
	req.Header.Del("Transfer-Encoding")
	req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return refusal{}
}

// outbound turns an admitted request into the upstream one, in place: the
// target URL (the upstream's base joined with rest, escaped as the box
// sent it, and the query), the upstream's Host, the box's credential
// headers dropped and the real one set; and the transport to send it
// with. A relayed credential (see [Relay]) sets no secret: its target is
// the session's relay on the laptop, which injects it. Its messages never
// hold the secret.
func (b *CredentialBroker) outbound(c *credential, relay *sessionRelay, req *http.Request, rest string) (*http.Request, http.RoundTripper, refusal) {
	var target, host, secret string
	rt := http.RoundTripper(c.transport)
	if c.Relayed {
		if relay == nil {
			return nil, nil, refusal{status: http.StatusBadGateway, msg: fmt.Sprintf("credential %q is held by the laptop that starts sessions here, and this session has no relay from it "+
				"(start the session from the laptop: corral --host ...)", c.Name)}
		}
		target, host, rt = "http://"+RelayHost+CredentialPrefix+relay.Token+"/"+c.Name+rest, RelayHost, relay.transport
	} else {
		v, err := c.Secret(req.Context())
		if err != nil || v == "" {
			b.logger.Warn("reading a brokered credential", "credential", c.Name, "err", err)
			msg := fmt.Sprintf("credential %q is not available on the host (see the broker log)", c.Name)
			// An error that says what to do (core/secret: an item that
			// needs a Keychain dialog names `corral secret set`).
			var say interface{ AgentText() string }
			if errors.As(err, &say) && say.AgentText() != "" {
				msg = fmt.Sprintf("credential %q is not available: %s", c.Name, say.AgentText())
			}
			return nil, nil, refusal{status: http.StatusBadGateway, msg: msg}
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return nil, nil, refusal{status: http.StatusBadGateway, msg: fmt.Sprintf("credential %q holds a line break or NUL; refusing to send it", c.Name)}
		}
		u := *c.upstream
		u.Path, u.RawPath = "", ""
		// rest is the canonical path as forwarded: one decoding of it by
		// the upstream is the path the rules judged.
		target, host, secret = u.String()+c.upstream.EscapedPath()+rest, c.upstream.Host, v
	}
	if req.URL.RawQuery != "" {
		target += "?" + req.URL.RawQuery
	}
	tu, err := url.Parse(target)
	if err != nil {
		return nil, nil, refusal{status: http.StatusBadRequest, msg: "credential request: bad path"}
	}
	out := req
	out.RequestURI = ""
	out.URL = tu
	out.Host = host
	// No trailer reaches the upstream: a server that merges trailers into
	// headers would read ones the rules never saw (an override, a
	// credential header).
	out.Trailer = nil
	for _, h := range strippedHeaders {
		out.Header.Del(h)
	}
	switch {
	case c.Relayed:
	case c.Header == HeaderAPIKey:
		out.Header.Set("X-Api-Key", secret)
	case c.Header == HeaderAuthorization:
		out.Header.Set("Authorization", "Bearer "+secret)
	case c.Header == HeaderGoogAPIKey:
		out.Header.Set("X-Goog-Api-Key", secret)
	case c.Header == HeaderBasic:
		out.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secret)))
	}
	return out, rt, refusal{}
}

type countingBody struct {
	r io.ReadCloser
	n int64
}

func (c *countingBody) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingBody) Close() error { return c.r.Close() }

func (b *CredentialBroker) logEvent(ev CredentialEvent) {
	if b.log != nil {
		b.log.LogCredential(ev)
	}
}

// methodClass is a request method as logged: the standard ones as they
// are, anything else "OTHER" (a box chooses the method).
func methodClass(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
		return m
	}
	return "OTHER"
}

// pathSegRe is a path segment a path class may keep: short, lowercase,
// no digits but a version number, nothing that could be an ID or a secret.
var pathSegRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(v[0-9]{1,2}((alpha|beta)[0-9]?)?|[a-z][a-z_-]{0,23})$`)
})

// PathClass names what a credential request did without its path's
// secrets or its query: git's smart-HTTP operations by name
// ("git-upload-pack" is a fetch, "git-receive-pack" a push, "info/refs
// git-receive-pack" the push's discovery), else at most the first two
// segments of the path when each is a plain lowercase word or an API
// version ("/v1/messages"), cut at the first other segment ("/v1/…").
func PathClass(rest, rawQuery string) string {
	switch {
	case strings.HasSuffix(rest, "/git-upload-pack"):
		return "git-upload-pack"
	case strings.HasSuffix(rest, "/git-receive-pack"):
		return "git-receive-pack"
	case strings.HasSuffix(rest, "/info/refs"):
		q, _ := url.ParseQuery(rawQuery)
		switch svc := q.Get("service"); svc {
		case "git-upload-pack", "git-receive-pack":
			return "info/refs " + svc
		}
		return "info/refs"
	}
	segs := strings.Split(strings.Trim(rest, "/"), "/")
	out := ""
	for i, seg := range segs {
		if i == 2 {
			return out + "/…"
		}
		if seg == "" && i == 0 {
			return "/"
		}
		if !pathSegRe().MatchString(seg) {
			return out + "/…"
		}
		out += "/" + seg
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
