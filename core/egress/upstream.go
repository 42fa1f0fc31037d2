package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/display"
)

// Reasons of a connection the policy allowed but the upstream proxy did
// not carry (see [UpstreamProxy]). Neither is approvable: no allow-list
// entry changes what the proxy does.
const (
	// ReasonProxyRefused: the proxy answered, and said no (an HTTP CONNECT
	// status other than 200, a 407 to an absolute-form request, a SOCKS5
	// reply other than success, or its authentication failed).
	ReasonProxyRefused Reason = "upstream-proxy-refused"
	// ReasonProxyFailed: the proxy could not be reached or spoke no
	// protocol the broker reads, or its credentials could not be read.
	ReasonProxyFailed Reason = "upstream-proxy-failed"
)

// Upstream proxy schemes.
const (
	ProxyHTTP   = "http"
	ProxySOCKS5 = "socks5"
)

// UpstreamProxy is the proxy every allowed connection leaves through
// (config key upstream_proxy), unless NoProxy names its destination.
//
// It is one more hop after the broker's decision, never a second
// decision: the box's request is read once, decided by the policy,
// resolved once and every address checked (private, loopback, self) as
// without a proxy; only then is the proxy asked, for the checked address
// (an IP literal: CONNECT 203.0.113.7:443, a SOCKS5 CONNECT of an IPv4 or
// IPv6 address, an absolute-form http://203.0.113.7:80/... request whose
// Host header is the name). The proxy resolves nothing, so it cannot be
// steered to another address than the one checked (a name that resolves
// differently inside the company's network, DNS rebinding between the two
// lookups). The proxy's own address is trusted configuration and may be
// loopback or private: that exemption is for this hop only; as a
// destination the proxy is refused to the box like any corral socket
// (see [Server] refusedLocal), so the box cannot reach it directly and
// use it without the allow-list.
//
// Its credentials are read on the host (Password, from the keychain),
// never put in a URL the broker logs, an argv, or a response to the box.
type UpstreamProxy struct {
	// Scheme is ProxyHTTP or ProxySOCKS5.
	Scheme string
	// Addr is the proxy's host:port (trusted; resolved by the host's
	// resolver, never checked against the box's policy).
	Addr string
	// User is the proxy user name; "" sends no credentials.
	User string
	// Password returns the proxy password (core/secret through the
	// broker). It is called when a connection first needs it and again
	// after it failed; a value read is kept for the broker's lifetime.
	Password func(ctx context.Context) (string, error)
	// NoProxy are the destinations dialled directly, parsed by
	// [ParseNoProxy].
	NoProxy NoProxy

	mu   sync.Mutex
	pass string
	have bool
}

// ParseUpstreamProxy reads an upstream proxy URL: http://HOST:PORT or
// socks5://HOST:PORT, with no user, path, query or fragment (credentials
// come from the keychain, never from a URL that could be logged).
func ParseUpstreamProxy(raw string) (scheme, addr string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", errors.New("not a URL")
	}
	switch {
	case u.Scheme != ProxyHTTP && u.Scheme != ProxySOCKS5:
		return "", "", errors.New(`the scheme must be "http" or "socks5"`)
	case u.User != nil:
		return "", "", errors.New("credentials may not be in the URL: name a keychain item instead")
	case u.Opaque != "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", "", errors.New("only scheme://host:port is allowed")
	case u.Port() == "" || u.Hostname() == "":
		return "", "", errors.New("the host and port must be given, e.g. http://proxy.example.com:3128")
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p < 1 || p > 65535 {
		return "", "", errors.New("the port must be 1-65535")
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return "", "", errors.New("no zone in the address")
		}
		host = ip.Unmap().String()
	} else if host, err = canonicalHost(host); err != nil {
		return "", "", fmt.Errorf("host: %w", err)
	}
	return u.Scheme, net.JoinHostPort(host, strconv.Itoa(p)), nil
}

// NoProxy is a parsed NO_PROXY-style list: the destinations dialled
// directly, past the proxy (still decided and checked like any other).
type NoProxy struct {
	hosts    map[string]bool
	suffixes []string // ".example.com"
	ranges   []netip.Prefix
}

// MaxNoProxy caps the no_proxy entries.
const MaxNoProxy = 256

// ParseNoProxy reads no_proxy entries: "host" (that name only),
// "*.suffix" or ".suffix" (names below suffix), an IP address or a CIDR
// range (the checked address). "*" alone is refused: leave
// upstream_proxy unset instead.
func ParseNoProxy(entries []string) (NoProxy, error) {
	n := NoProxy{hosts: map[string]bool{}}
	if len(entries) > MaxNoProxy {
		return n, fmt.Errorf("at most %d entries", MaxNoProxy)
	}
	var errs []error
	for _, e := range entries {
		if pfx, err := netip.ParsePrefix(e); err == nil {
			n.ranges = append(n.ranges, pfx.Masked())
			continue
		}
		if ip, err := netip.ParseAddr(e); err == nil {
			n.ranges = append(n.ranges, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			continue
		}
		name, suffix := e, false
		if rest, ok := strings.CutPrefix(e, "*."); ok {
			name, suffix = rest, true
		} else if rest, ok := strings.CutPrefix(e, "."); ok {
			name, suffix = rest, true
		}
		h, err := canonicalHost(name)
		if err != nil || strings.ContainsAny(name, "*:/ ") {
			errs = append(errs, fmt.Errorf("%q: not a host, *.suffix, address or range", e))
			continue
		}
		if suffix {
			n.suffixes = append(n.suffixes, "."+h)
		} else {
			n.hosts[h] = true
		}
	}
	return n, errors.Join(errs...)
}

// Direct reports whether a destination (its canonical host and the
// checked address) is dialled directly.
func (n NoProxy) Direct(host string, ip netip.Addr) bool {
	if n.hosts[host] {
		return true
	}
	for _, s := range n.suffixes {
		if strings.HasSuffix(host, s) {
			return true
		}
	}
	ip = ip.Unmap()
	for _, r := range n.ranges {
		if ip.IsValid() && r.Contains(ip) {
			return true
		}
	}
	return false
}

// via reports whether a connection to host at ip goes through u.
func (u *UpstreamProxy) via(host string, ip netip.Addr) bool {
	return u != nil && !u.NoProxy.Direct(host, ip)
}

// password returns the proxy password, reading it once.
func (u *UpstreamProxy) password(ctx context.Context) (string, error) {
	if u.User == "" || u.Password == nil {
		return "", nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.have {
		return u.pass, nil
	}
	p, err := u.Password(ctx)
	if err != nil {
		return "", err
	}
	u.pass, u.have = p, true
	return p, nil
}

// scrub removes the password from text about the proxy, should a library
// ever put it there, and makes the text safe to log or show.
func (u *UpstreamProxy) scrub(s string) string {
	u.mu.Lock()
	p := u.pass
	u.mu.Unlock()
	if len(p) >= 1 {
		s = strings.ReplaceAll(s, p, "***")
	}
	return display.Text(s, 200)
}

// ProxyError is a connection the upstream proxy did not carry.
type ProxyError struct {
	Reason Reason // ReasonProxyRefused or ReasonProxyFailed
	Detail string // what the proxy said or what failed, scrubbed
}

func (e *ProxyError) Error() string {
	if e.Reason == ReasonProxyRefused {
		return "the upstream proxy refused: " + e.Detail
	}
	return "the upstream proxy failed: " + e.Detail
}

// dial connects to dst through the proxy: an HTTP CONNECT or a SOCKS5
// CONNECT of the checked address. The connection returned is the proxy's
// socket itself, past the handshake, so tunnels still splice.
func (u *UpstreamProxy) dial(ctx context.Context, d *net.Dialer, dst netip.AddrPort) (net.Conn, error) {
	pass, err := u.password(ctx)
	if err != nil {
		return nil, &ProxyError{Reason: ReasonProxyFailed, Detail: "reading the proxy's credentials: " + u.scrub(err.Error())}
	}
	c, err := d.DialContext(ctx, "tcp", u.Addr)
	if err != nil {
		return nil, &ProxyError{Reason: ReasonProxyFailed, Detail: "connecting to the proxy: " + u.scrub(err.Error())}
	}
	deadline := time.Now().Add(max(d.Timeout, time.Second))
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	c.SetDeadline(deadline)                                                //nolint:errcheck
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) }) //nolint:errcheck
	if u.Scheme == ProxySOCKS5 {
		err = socks5Connect(c, u.User, pass, dst)
	} else {
		err = httpConnect(c, u.User, pass, dst)
	}
	if !stop() && err == nil {
		err = &ProxyError{Reason: ReasonProxyFailed, Detail: "cancelled"}
	}
	if err != nil {
		c.Close()
		var pe *ProxyError
		if !errors.As(err, &pe) {
			pe = &ProxyError{Reason: ReasonProxyFailed, Detail: err.Error()}
		}
		pe.Detail = u.scrub(pe.Detail)
		return nil, pe
	}
	c.SetDeadline(time.Time{}) //nolint:errcheck
	return c, nil
}

func basicAuth(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// maxProxyHead caps the proxy's answer to a CONNECT.
const maxProxyHead = 16 << 10

// httpConnect asks an HTTP proxy for a tunnel to dst. The answer's head is
// read a byte at a time, so nothing past it is consumed: the tunnel's
// first bytes stay in the socket.
func httpConnect(c net.Conn, user, pass string, dst netip.AddrPort) error {
	var b strings.Builder
	b.WriteString("CONNECT " + dst.String() + " HTTP/1.1\r\nHost: " + dst.String() + "\r\n")
	if user != "" {
		b.WriteString("Proxy-Authorization: " + basicAuth(user, pass) + "\r\n")
	}
	b.WriteString("\r\n")
	if _, err := io.WriteString(c, b.String()); err != nil {
		return fmt.Errorf("sending CONNECT: %w", err)
	}
	head := make([]byte, 0, 256)
	one := make([]byte, 1)
	for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		if len(head) >= maxProxyHead {
			return errors.New("the answer to CONNECT is too long")
		}
		if _, err := c.Read(one); err != nil {
			return fmt.Errorf("reading the answer to CONNECT: %w", err)
		}
		head = append(head, one[0])
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(head)), nil)
	if err != nil {
		return fmt.Errorf("the answer to CONNECT is not HTTP: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		detail := "CONNECT " + dst.String() + ": " + resp.Status
		if resp.StatusCode == http.StatusProxyAuthRequired {
			detail += " (check the keychain item of upstream_proxy)"
		}
		return &ProxyError{Reason: ReasonProxyRefused, Detail: detail}
	}
	return nil
}

// socks5Replies are RFC 1928's reply codes.
var socks5Replies = map[byte]string{
	1: "general SOCKS server failure", 2: "connection not allowed by ruleset",
	3: "network unreachable", 4: "host unreachable", 5: "connection refused",
	6: "TTL expired", 7: "command not supported", 8: "address type not supported",
}

// socks5Connect runs RFC 1928's CONNECT for dst, with RFC 1929's user name
// and password when user is set.
func socks5Connect(c net.Conn, user, pass string, dst netip.AddrPort) error {
	greet := []byte{5, 1, 0}
	if user != "" {
		if len(user) > 255 || len(pass) > 255 {
			return errors.New("the SOCKS5 user name and password are at most 255 bytes each")
		}
		greet = []byte{5, 1, 2} // only user/password: never fall back to none
	}
	if _, err := c.Write(greet); err != nil {
		return fmt.Errorf("socks5 greeting: %w", err)
	}
	var rep [2]byte
	if _, err := io.ReadFull(c, rep[:]); err != nil {
		return fmt.Errorf("socks5 greeting: %w", err)
	}
	if rep[0] != 5 {
		return errors.New("not a SOCKS5 proxy")
	}
	switch {
	case rep[1] == 0xff:
		return &ProxyError{Reason: ReasonProxyRefused, Detail: "socks5: no acceptable authentication method"}
	case rep[1] != greet[2]:
		return fmt.Errorf("socks5: the proxy chose method %d, which was not offered", rep[1])
	}
	if user != "" {
		msg := append([]byte{1, byte(len(user))}, user...)
		msg = append(append(msg, byte(len(pass))), pass...)
		if _, err := c.Write(msg); err != nil {
			return fmt.Errorf("socks5 authentication: %w", err)
		}
		if _, err := io.ReadFull(c, rep[:]); err != nil {
			return fmt.Errorf("socks5 authentication: %w", err)
		}
		if rep[1] != 0 {
			return &ProxyError{Reason: ReasonProxyRefused, Detail: "socks5: authentication failed (check the keychain item of upstream_proxy)"}
		}
	}
	ip := dst.Addr().Unmap()
	req := []byte{5, 1, 0}
	if ip.Is4() {
		a := ip.As4()
		req = append(append(req, 1), a[:]...)
	} else {
		a := ip.As16()
		req = append(append(req, 4), a[:]...)
	}
	req = append(req, byte(dst.Port()>>8), byte(dst.Port()))
	if _, err := c.Write(req); err != nil {
		return fmt.Errorf("socks5 connect: %w", err)
	}
	var head [4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		return fmt.Errorf("socks5 connect: %w", err)
	}
	if head[0] != 5 {
		return errors.New("socks5 connect: malformed reply")
	}
	if head[1] != 0 {
		why, ok := socks5Replies[head[1]]
		if !ok {
			why = "reply " + strconv.Itoa(int(head[1]))
		}
		return &ProxyError{Reason: ReasonProxyRefused, Detail: "socks5 CONNECT " + dst.String() + ": " + why}
	}
	var skip int
	switch head[3] {
	case 1:
		skip = 4 + 2
	case 4:
		skip = 16 + 2
	case 3:
		var l [1]byte
		if _, err := io.ReadFull(c, l[:]); err != nil {
			return fmt.Errorf("socks5 connect: %w", err)
		}
		skip = int(l[0]) + 2
	default:
		return errors.New("socks5 connect: malformed reply address")
	}
	if _, err := io.CopyN(io.Discard, c, int64(skip)); err != nil {
		return fmt.Errorf("socks5 connect: %w", err)
	}
	return nil
}

// forwardTransport is the transport of absolute-form http:// requests
// through u: each connection is a tunnel through the proxy (HTTP CONNECT
// or SOCKS5) to the checked address the request's URL names, and the
// request goes through it in origin form with the box's Host header.
//
// An HTTP proxy is not sent the request in absolute form: the proxy
// would take the destination from the request line (RFC 9112 section
// 3.2.2), so either the line names the checked address and the origin
// gets that address as its Host (virtual hosts break), or it names the
// host and the proxy resolves it again (the address the broker checked is
// not the one dialled). A tunnel keeps both: the proxy must allow CONNECT
// to the ports the allow-list opens for plain http (squid's default
// SSL_ports rule allows only 443); where it does not, the box gets 502
// upstream-proxy-refused with the proxy's status.
func (u *UpstreamProxy) forwardTransport(base *http.Transport, d *net.Dialer) *http.Transport {
	t := base.Clone()
	t.Proxy = nil
	t.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return nil, fmt.Errorf("not a checked address: %s", addr)
		}
		return u.dial(ctx, d, ap)
	}
	return t
}

// proxyFailure is the decision line of a connection the policy allowed
// and the proxy did not carry.
func proxyFailure(t target, kind Kind, err error) (Decision, string) {
	d := t.d
	d.Time, d.Allowed, d.Kind = time.Now(), false, kind
	d.Reason, d.Detail = ReasonProxyFailed, err.Error()
	var pe *ProxyError
	if errors.As(err, &pe) {
		d.Reason, d.Detail = pe.Reason, pe.Detail
	}
	return d, "corral: egress to " + t.auth.String() + " allowed, but " + (&ProxyError{Reason: d.Reason, Detail: d.Detail}).Error() + "\n"
}

// writeProxyFailure logs and answers a connection the policy allowed and
// the upstream proxy did not carry: 502, with the reason in the decision
// log and in X-Corral-Egress-Reason.
func (s *Server) writeProxyFailure(nc net.Conn, t target, kind Kind, pe *ProxyError) {
	d, body := proxyFailure(t, kind, pe)
	s.logDecision(d)
	s.writeError(nc, http.StatusBadGateway, body, "X-Corral-Egress-Reason", string(d.Reason))
}

// isUpstreamProxy reports whether ip:port is the upstream proxy itself
// (on this host: any local address with its port), which no box may
// reach as a destination whatever its ranges allow: through it the box
// would reach anything the proxy does, past the allow-list.
func (s *Server) isUpstreamProxy(ip netip.Addr, port int) bool {
	u := s.cfg.Upstream
	if u == nil {
		return false
	}
	host, p, err := net.SplitHostPort(u.Addr)
	if err != nil || p != strconv.Itoa(port) {
		return false
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.DialTimeout)
		addrs, _ = net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		cancel()
	}
	for _, a := range addrs {
		a = a.Unmap()
		if a == ip || s.isLocal(a) && s.isLocal(ip) {
			return true
		}
	}
	return false
}
