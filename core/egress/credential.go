package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The credential broker: a reverse proxy inside the egress broker that
// holds secrets the box never sees. A box reaches it at
// http://BROKER/corral/credential/NAME/..., in plain HTTP inside the host
// funnel (with or without its proxy variables: an origin-form request and
// an absolute-form one addressed to the broker itself are the same). The
// broker drops every credential header the box sent, adds the real one,
// and forwards over TLS with certificate verification to the configured
// upstream. The box can use a credential through its broker, but never
// read it.

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
)

// CredentialHeaders lists the valid headers.
var CredentialHeaders = []CredentialHeader{HeaderAPIKey, HeaderAuthorization, HeaderBasic}

// strippedHeaders are never forwarded from the box to a credential
// upstream: whatever the box sends there is at best a placeholder.
var strippedHeaders = []string{"Authorization", "X-Api-Key", "Proxy-Authorization", "Cookie"}

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

// CredentialEvent is one brokered request, as logged: never the value.
type CredentialEvent struct {
	Time     time.Time
	Name     string
	Upstream string // host[:port]
	Method   string
	Status   int   // what the box got: the upstream's status, or the broker's own 4xx/5xx
	Bytes    int64 // response body bytes relayed to the box
	Err      string
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
	creds    map[string]*credential
	resolver Resolver
	policy   func() *Policy
	log      CredentialLogger
	logger   *slog.Logger
	requests atomic.Int64
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
}

// NewCredentialBroker validates the credentials.
func NewCredentialBroker(cfg CredentialConfig) (*CredentialBroker, error) {
	b := &CredentialBroker{creds: map[string]*credential{}, resolver: cfg.Resolver, log: cfg.Log, logger: cfg.Logger}
	if b.resolver == nil {
		b.resolver = net.DefaultResolver
	}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = DefaultDialTimeout
	}
	var errs []error
	for _, c := range cfg.Credentials {
		if !ValidCredentialName(c.Name) {
			errs = append(errs, fmt.Errorf("credential %q: not a valid name (lowercase letters, digits, - and _)", c.Name))
			continue
		}
		if _, dup := b.creds[c.Name]; dup {
			errs = append(errs, fmt.Errorf("credential %q: defined twice", c.Name))
			continue
		}
		u, err := ParseUpstream(c.Upstream)
		if err != nil {
			errs = append(errs, fmt.Errorf("credential %q: %w", c.Name, err))
			continue
		}
		auth, _ := ParseAuthority(u.Host, 443)
		switch c.Header {
		case HeaderAPIKey, HeaderAuthorization, HeaderBasic:
		default:
			errs = append(errs, fmt.Errorf("credential %q: header %q: use one of x-api-key, authorization, basic", c.Name, c.Header))
			continue
		}
		if c.Secret == nil {
			errs = append(errs, fmt.Errorf("credential %q: no secret source", c.Name))
			continue
		}
		cr := &credential{Credential: c, upstream: u, auth: auth}
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
		b.creds[c.Name] = cr
	}
	return b, errors.Join(errs...)
}

// Names lists the credentials served.
func (b *CredentialBroker) Names() []string {
	out := make([]string, 0, len(b.creds))
	for n := range b.creds {
		out = append(out, n)
	}
	return out
}

// dial connects to an upstream: an IP literal in the trusted config is
// dialled as written; a name is resolved once and only public addresses
// (or addresses in the box's explicitly allowed ranges) are dialled.
func (b *CredentialBroker) dial(ctx context.Context, d *net.Dialer, a Authority) (net.Conn, error) {
	if a.IP.IsValid() {
		return d.DialContext(ctx, "tcp", netip.AddrPortFrom(a.IP, uint16(a.Port)).String())
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
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(ip, uint16(a.Port)).String())
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

// credentialPath splits "/corral/credential/NAME/REST" into the credential
// and the upstream path REST (with its leading "/"). REST must be clean:
// no "." or ".." segments, no "//", no encoded "/" or "." tricks, so a
// request cannot climb out of the upstream's base path.
func credentialPath(escaped string) (name, rest string, err error) {
	tail, ok := strings.CutPrefix(escaped, CredentialPrefix)
	if !ok {
		return "", "", errors.New("not a credential path")
	}
	name, rest, _ = strings.Cut(tail, "/")
	rest = "/" + rest
	if strings.Contains(strings.ToLower(rest), "%2f") || strings.Contains(strings.ToLower(rest), "%2e") || strings.Contains(rest, "\\") {
		return name, "", errors.New("encoded path separators are not allowed")
	}
	clean := path.Clean(rest)
	if strings.HasSuffix(rest, "/") && clean != "/" {
		clean += "/"
	}
	if clean != rest {
		return name, "", errors.New("the path must be clean (no ., .. or //)")
	}
	return name, rest, nil
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

// handleCredential forwards one credential request and reports whether the
// connection may carry another one.
func (s *Server) handleCredential(nc net.Conn, br *bufio.Reader, req *http.Request) bool {
	b := s.cfg.Credentials
	b.requests.Add(1)
	ev := CredentialEvent{Time: time.Now(), Method: req.Method}
	fail := func(status int, msg string) bool {
		ev.Status, ev.Err = status, msg
		b.logEvent(ev)
		s.writeError(nc, status, "corral: "+msg+"\n", "X-Corral-Credential-Error", strconv.Itoa(status))
		if req.ContentLength != 0 || br.Buffered() > 0 {
			lingerClose(nc, br)
		}
		return false
	}
	name, rest, err := credentialPath(req.URL.EscapedPath())
	ev.Name = truncate(name, 64)
	if err != nil {
		return fail(http.StatusBadRequest, "credential request: "+err.Error())
	}
	c := b.creds[name]
	if c == nil {
		return fail(http.StatusNotFound, fmt.Sprintf("no credential %q in this box's broker (configure [credentials.%s] in a trusted config; "+
			"one taken from a host variable must be set when the box's broker starts: corral stop, then start the box from that shell)", ev.Name, ev.Name))
	}
	ev.Upstream = c.auth.String()
	secret, err := c.Secret(req.Context())
	if err != nil || secret == "" {
		b.logger.Warn("reading a brokered credential", "credential", name, "err", err)
		return fail(http.StatusBadGateway, fmt.Sprintf("credential %q is not available on the host (see the broker log)", name))
	}
	if strings.ContainsAny(secret, "\r\n\x00") {
		return fail(http.StatusBadGateway, fmt.Sprintf("credential %q holds a line break or NUL; refusing to send it", name))
	}

	u := *c.upstream
	u.Path, u.RawPath = "", ""
	// rest was checked clean; it is joined escaped, so the upstream sees
	// the bytes the box sent.
	target := u.String() + c.upstream.EscapedPath() + rest
	if req.URL.RawQuery != "" {
		target += "?" + req.URL.RawQuery
	}
	tu, err := url.Parse(target)
	if err != nil {
		return fail(http.StatusBadRequest, "credential request: bad path")
	}
	out := req
	out.RequestURI = ""
	out.URL = tu
	out.Host = c.upstream.Host
	for _, h := range strippedHeaders {
		out.Header.Del(h)
	}
	switch c.Header {
	case HeaderAPIKey:
		out.Header.Set("X-Api-Key", secret)
	case HeaderAuthorization:
		out.Header.Set("Authorization", "Bearer "+secret)
	case HeaderBasic:
		out.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("x-access-token:"+secret)))
	}
	keep, res := s.exchange(nc, br, req, out, c.transport, "credential "+name+" upstream "+ev.Upstream)
	ev.Status, ev.Bytes, ev.Err = res.status, res.bytes, res.err
	b.logEvent(ev)
	return keep
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

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
