package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Reason is a stable short code saying why a destination was allowed or
// denied. It is written to the decision log and shown to users.
type Reason string

// Reason codes. They are part of the decision log format: do not rename.
const (
	ReasonAllowed            Reason = "allowed"
	ReasonHostNotAllowed     Reason = "host-not-allowed"
	ReasonPortNotAllowed     Reason = "port-not-allowed"
	ReasonIPLiteral          Reason = "ip-literal"
	ReasonPrivateIP          Reason = "private-ip"
	ReasonSelf               Reason = "self"
	ReasonResolveFailed      Reason = "resolve-failed"
	ReasonMalformedAuthority Reason = "malformed-authority"
	ReasonUserinfo           Reason = "userinfo"
)

// Kind says how a destination was requested.
type Kind string

// Request kinds, as written to the decision log.
const (
	KindConnect Kind = "connect"
	KindHTTP    Kind = "http"
)

// Request is the input of [Policy.Decide].
type Request struct {
	Kind Kind
	// Host is canonical (see [ParseAuthority]): a lowercase ASCII name or an
	// IP literal.
	Host string
	Port int
	// IP is the resolved address that would be dialled. The zero value asks
	// for the name check only, which is done before resolving.
	IP netip.Addr
}

// Decision is the outcome of a policy check, with the request it is about so
// that it can be logged as one line.
type Decision struct {
	Time    time.Time
	Kind    Kind
	Host    string
	Port    int
	IP      netip.Addr
	Allowed bool
	Reason  Reason
}

// Decider decides whether a request may go out. [*Policy] implements it.
type Decider interface {
	Decide(Request) Decision
}

var _ Decider = (*Policy)(nil)

// portSet is the set of ports an entry allows. The zero value allows none.
type portSet struct {
	any   bool
	web   bool // 80 and 443: an entry without a port
	ports []int
}

func (s *portSet) add(port int, anyPort bool) {
	switch {
	case anyPort:
		s.any = true
	case port == 0:
		s.web = true
	default:
		s.ports = append(s.ports, port)
	}
}

func (s *portSet) allows(port int) bool {
	if s.any || s.web && (port == 80 || port == 443) {
		return true
	}
	for _, p := range s.ports {
		if p == port {
			return true
		}
	}
	return false
}

// Policy is an immutable egress allow-list. Build it with [ParsePolicy]; swap
// it whole to change it.
type Policy struct {
	exact  map[string]*portSet
	suffix map[string]*portSet // key ".example.com" for "*.example.com"
	ranges []netip.Prefix
	text   []string // canonical entries, for String
}

// ParsePolicy builds a policy from allow-list entries and CIDR ranges.
//
// An entry is "host", "*.suffix", either followed by ":port" or ":*" (any
// port). Without a port only 80 and 443 are allowed. "*.example.com" matches
// every name below example.com, but not example.com itself. Names are
// case-insensitive, a trailing dot is ignored and Unicode names are converted
// to punycode. IP literals are not entries: use a range.
//
// A range ("10.1.2.0/24", "127.0.0.0/8", "fd00::/8") allows destinations in
// it that are otherwise denied: private, loopback and link-local addresses
// and IP-literal targets. Every malformed entry and range is reported, joined
// into one error.
func ParsePolicy(entries []string, ranges []string) (*Policy, error) {
	p := &Policy{exact: map[string]*portSet{}, suffix: map[string]*portSet{}}
	var errs []error
	for _, e := range entries {
		host, port, anyPort, wild, err := parseEntry(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("allow entry %q: %w", e, err))
			continue
		}
		m, key := p.exact, host
		if wild {
			m, key = p.suffix, "."+host
		}
		ps := m[key]
		if ps == nil {
			ps = &portSet{}
			m[key] = ps
		}
		ps.add(port, anyPort)
		p.text = append(p.text, canonicalEntry(host, port, anyPort, wild))
	}
	for _, r := range ranges {
		pfx, err := netip.ParsePrefix(strings.TrimSpace(r))
		if err != nil {
			errs = append(errs, fmt.Errorf("allow range %q: %w (want CIDR such as 10.0.0.0/8)", r, err))
			continue
		}
		if pfx.Addr().Zone() != "" {
			errs = append(errs, fmt.Errorf("allow range %q: zones are not supported", r))
			continue
		}
		p.ranges = append(p.ranges, pfx.Masked())
		p.text = append(p.text, "range "+pfx.Masked().String())
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func canonicalEntry(host string, port int, anyPort, wild bool) string {
	if wild {
		host = "*." + host
	}
	switch {
	case anyPort:
		return host + ":*"
	case port != 0:
		return fmt.Sprintf("%s:%d", host, port)
	}
	return host
}

// String lists the canonical entries and ranges, for diagnostics.
func (p *Policy) String() string { return strings.Join(p.text, ", ") }

// parseEntry parses one allow-list entry. port 0 with anyPort false means
// "no port given" (80 and 443).
func parseEntry(e string) (host string, port int, anyPort, wild bool, err error) {
	s := strings.TrimSpace(e)
	if s == "" {
		return "", 0, false, false, errors.New("empty entry")
	}
	if strings.ContainsAny(s, "/@[] \t") {
		return "", 0, false, false, errors.New("want host, *.suffix, host:port or host:* (no scheme, path, userinfo or IPv6 literal)")
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		ps := s[i+1:]
		s = s[:i]
		if ps == "*" {
			anyPort = true
		} else if port, err = parsePort(ps); err != nil {
			return "", 0, false, false, fmt.Errorf("port %q: %w", ps, err)
		}
	}
	if strings.HasPrefix(s, "*.") {
		wild = true
		s = s[2:]
	}
	if strings.Contains(s, "*") {
		return "", 0, false, false, errors.New("'*' is only allowed as a leading '*.' label")
	}
	if _, perr := netip.ParseAddr(s); perr == nil {
		return "", 0, false, false, errors.New("IP literals are not host entries; allow a range such as 10.0.0.5/32 instead")
	}
	host, err = canonicalHost(s)
	if err != nil {
		return "", 0, false, false, err
	}
	return host, port, anyPort, wild, nil
}

// Decide checks a request against the policy. It never resolves names:
// without Request.IP it checks the name and port only; with it, it also
// classifies the address.
func (p *Policy) Decide(r Request) Decision {
	d := Decision{Kind: r.Kind, Host: r.Host, Port: r.Port, IP: r.IP}
	deny := func(reason Reason) Decision { d.Reason = reason; return d }
	if lit, err := netip.ParseAddr(r.Host); err == nil {
		if !p.inRange(lit) {
			return deny(ReasonIPLiteral)
		}
		if r.IP.IsValid() && r.IP != lit {
			return deny(ReasonIPLiteral)
		}
		d.Allowed, d.Reason = true, ReasonAllowed
		return d
	}
	if reason := p.matchName(r.Host, r.Port); reason != ReasonAllowed {
		return deny(reason)
	}
	if r.IP.IsValid() && !p.inRange(r.IP) && !PublicAddr(r.IP) {
		return deny(ReasonPrivateIP)
	}
	d.Allowed, d.Reason = true, ReasonAllowed
	return d
}

func (p *Policy) matchName(host string, port int) Reason {
	matched := false
	if ps := p.exact[host]; ps != nil {
		if ps.allows(port) {
			return ReasonAllowed
		}
		matched = true
	}
	// Try every proper suffix starting at a dot: a.b.example.com tries
	// .b.example.com, .example.com and .com. The apex never matches because
	// the key always starts with a dot that the host itself does not have.
	for i := 0; i < len(host); i++ {
		if host[i] != '.' {
			continue
		}
		if ps := p.suffix[host[i:]]; ps != nil {
			if ps.allows(port) {
				return ReasonAllowed
			}
			matched = true
		}
	}
	if matched {
		return ReasonPortNotAllowed
	}
	return ReasonHostNotAllowed
}

func (p *Policy) inRange(ip netip.Addr) bool {
	for _, r := range p.ranges {
		if r.Contains(ip) {
			return true
		}
	}
	return false
}

// allowsExactly reports whether a single-address range (/32 or /128) names
// ip: the only way to let a box reach the broker's own listen address.
func (p *Policy) allowsExactly(ip netip.Addr) bool {
	for _, r := range p.ranges {
		if r.IsSingleIP() && r.Addr() == ip {
			return true
		}
	}
	return false
}

var (
	cgnat     = netip.MustParsePrefix("100.64.0.0/10")
	thisNet   = netip.MustParsePrefix("0.0.0.0/8")
	ietf      = netip.MustParsePrefix("192.0.0.0/24")
	bench     = netip.MustParsePrefix("198.18.0.0/15")
	reserved4 = netip.MustParsePrefix("240.0.0.0/4") // includes 255.255.255.255
	siteLocal = netip.MustParsePrefix("fec0::/10")
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
)

// PublicAddr reports whether ip is a globally routable unicast address that a
// box may reach without an explicit range. It is false for loopback, RFC 1918,
// CGNAT (100.64.0.0/10), link-local (including the 169.254.169.254 metadata
// address), multicast, unspecified, IPv4-mapped IPv6, unique-local fc00::/7,
// site-local and reserved addresses. NAT64 addresses (64:ff9b::/96) are
// judged by the IPv4 address they embed.
func PublicAddr(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" || ip.Is4In6() {
		return false
	}
	if nat64.Contains(ip) {
		b := ip.As16()
		return PublicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range []netip.Prefix{cgnat, thisNet, ietf, bench, reserved4, siteLocal} {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
