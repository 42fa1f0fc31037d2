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
	// ReasonLearning: allowed only because the box is learning (see
	// [Policy.Learning]); `corral egress learn` proposes these.
	ReasonLearning Reason = "learning"
	// ReasonPolicyDenied: the organisation's managed policy never allows
	// the destination (deny_egress; see [Policy.Deny]), whatever the
	// allow-list says.
	ReasonPolicyDenied Reason = "policy-denied"
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
	// Held is how long the request waited in a hold (see [Config.Hold])
	// before this decision; 0 when the decision was made at once.
	Held time.Duration
	// Who is what the client said about itself (the session in its proxy
	// credentials, see [ProxySession]): the box's word, logged and shown,
	// never decided on.
	Who Attribution
	// SNI is the TLS server name a tunnel's client asked for, set only on
	// a refusal for it (ReasonSNIMismatch).
	SNI string
	// Detail is what the upstream proxy said or what failed, set only on
	// ReasonProxyRefused and ReasonProxyFailed (scrubbed of its
	// credentials).
	Detail string
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
	learn  bool     // see Learning
	denied []AllowEntry
}

// Learning returns a copy of p that also allows, with [ReasonLearning],
// every name p denies by host or port, as long as it resolves to public
// addresses: private and special-purpose addresses and IP-literal targets
// are still refused unless a range allows them. It is how a learning box's
// broker lets the box reach what it needs while the decision log records
// it.
func (p *Policy) Learning() *Policy {
	c := *p
	c.learn = true
	return &c
}

// Deny makes p refuse every destination an entry names, whatever allows
// it, learning included: a host the entry names or its wildcard covers
// (on every port), an address (the target's literal or the address it
// resolved to) inside its range. The broker adds the organisation's
// deny_egress (core/config Managed). It returns p.
func (p *Policy) Deny(entries []AllowEntry) *Policy {
	p.denied = append(p.denied, entries...)
	return p
}

// isDenied reports whether Deny's entries name host or ip.
func (p *Policy) isDenied(host string, ip netip.Addr) bool {
	if len(p.denied) == 0 {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	lit, litErr := netip.ParseAddr(host)
	for _, d := range p.denied {
		if d.IsRange() {
			if ip.IsValid() && d.Range.Contains(ip.Unmap()) || litErr == nil && d.Range.Contains(lit.Unmap()) {
				return true
			}
			continue
		}
		if host == d.Host || d.Wild && strings.HasSuffix(host, "."+d.Host) {
			return true
		}
	}
	return false
}

// IsLearning reports whether p was made by [Policy.Learning].
func (p *Policy) IsLearning() bool { return p.learn }

// ParsePolicy builds a policy from allow-list entries and CIDR ranges,
// each parsed by [ParseAllowEntry], the one grammar: entries are what a
// config's egress key takes (host, *.suffix, host:port, host:* or a range),
// ranges must be ranges (the standalone broker's --allow-range).
//
// Without a port only 80 and 443 are allowed. "*.example.com" matches
// every name below example.com, but not example.com itself. IP literals
// are not host entries: use a range. A range ("10.1.2.0/24",
// "127.0.0.0/8", "fd00::/8") allows destinations in it that are otherwise
// denied: private, loopback and link-local addresses and IP-literal
// targets. Every malformed entry and range is reported, joined into one
// error.
func ParsePolicy(entries []string, ranges []string) (*Policy, error) {
	parsed, err := ParseAllowList(entries, ranges)
	if err != nil {
		return nil, err
	}
	return NewPolicy(parsed), nil
}

// ParseAllowList parses entries and ranges as [ParsePolicy] does, and
// returns them parsed, for [NewPolicy].
func ParseAllowList(entries []string, ranges []string) ([]AllowEntry, error) {
	var parsed []AllowEntry
	var errs []error
	for _, s := range entries {
		e, err := ParseAllowEntry(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("allow entry %q: %w", s, err))
			continue
		}
		parsed = append(parsed, e)
	}
	for _, s := range ranges {
		e, err := ParseAllowEntry(s)
		if err == nil && !e.IsRange() {
			err = errors.New("not a range")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("allow range %q: %w (want CIDR such as 10.0.0.0/8)", s, err))
			continue
		}
		parsed = append(parsed, e)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return parsed, nil
}

// NewPolicy builds a policy from parsed entries (see [ParseAllowEntry]):
// what a caller that already parsed its allow-list builds, once, without
// parsing it again.
func NewPolicy(entries []AllowEntry) *Policy {
	p := &Policy{exact: map[string]*portSet{}, suffix: map[string]*portSet{}}
	var ranges []string
	for _, e := range entries {
		if e.IsRange() {
			p.ranges = append(p.ranges, e.Range)
			ranges = append(ranges, "range "+e.String())
			continue
		}
		m, key := p.exact, e.Host
		if e.Wild {
			m, key = p.suffix, "."+e.Host
		}
		ps := m[key]
		if ps == nil {
			ps = &portSet{}
			m[key] = ps
		}
		ps.add(e.Port, e.AnyPort)
		p.text = append(p.text, e.String())
	}
	p.text = append(p.text, ranges...) // names first, as String has always listed them
	return p
}

// String lists the canonical entries and ranges, for diagnostics.
func (p *Policy) String() string { return strings.Join(p.text, ", ") }

// Decide checks a request against the policy. It never resolves names:
// without Request.IP it checks the name and port only; with it, it also
// classifies the address.
func (p *Policy) Decide(r Request) Decision {
	d := Decision{Kind: r.Kind, Host: r.Host, Port: r.Port, IP: r.IP}
	deny := func(reason Reason) Decision { d.Reason = reason; return d }
	if p.isDenied(r.Host, r.IP) {
		return deny(ReasonPolicyDenied)
	}
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
	reason := p.matchName(r.Host, r.Port)
	if reason != ReasonAllowed && !p.learn {
		return deny(reason)
	}
	if r.IP.IsValid() && !p.inRange(r.IP) && !PublicAddr(r.IP) {
		return deny(ReasonPrivateIP)
	}
	if reason != ReasonAllowed {
		reason = ReasonLearning
	}
	d.Allowed, d.Reason = true, reason
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

// specialPurpose are the IANA special-purpose address blocks (the IPv4 and
// IPv6 Special-Purpose Address Registries, RFC 6890 and successors) that a
// box never reaches without an explicit range. Loopback, RFC 1918,
// link-local, multicast and unspecified are caught by netip's predicates
// first; they are listed here too so that this table alone says what is
// refused. 64:ff9b::/96 (NAT64), 2002::/16 (6to4) and 2001::/32 (Teredo)
// are not here: they are judged by the IPv4 addresses they embed.
var specialPurpose = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		// IPv4
		"0.0.0.0/8",          // "this network" (RFC 791)
		"10.0.0.0/8",         // private (RFC 1918)
		"100.64.0.0/10",      // shared address space, CGNAT (RFC 6598)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local, cloud metadata (RFC 3927)
		"172.16.0.0/12",      // private (RFC 1918)
		"192.0.0.0/24",       // IETF protocol assignments (RFC 6890)
		"192.0.2.0/24",       // documentation, TEST-NET-1 (RFC 5737)
		"192.88.99.0/24",     // 6to4 relay anycast, deprecated (RFC 7526)
		"192.168.0.0/16",     // private (RFC 1918)
		"198.18.0.0/15",      // benchmarking (RFC 2544)
		"198.51.100.0/24",    // documentation, TEST-NET-2 (RFC 5737)
		"203.0.113.0/24",     // documentation, TEST-NET-3 (RFC 5737)
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved (RFC 1112)
		"255.255.255.255/32", // limited broadcast (RFC 919)
		// IPv6
		"::/128",          // unspecified
		"::1/128",         // loopback
		"::/96",           // IPv4-compatible, deprecated (RFC 4291)
		"::ffff:0:0/96",   // IPv4-mapped (RFC 4291)
		"::ffff:0:0:0/96", // IPv4-translated, SIIT (RFC 2765)
		"64:ff9b:1::/48",  // NAT64 local-use (RFC 8215)
		"100::/64",        // discard-only (RFC 6666)
		"100:0:0:1::/64",  // dummy prefix (RFC 9780)
		"2001::/23",       // IETF protocol assignments (RFC 2928), Teredo aside
		"2001:db8::/32",   // documentation (RFC 3849)
		"3fff::/20",       // documentation (RFC 9637)
		"5f00::/16",       // SRv6 SIDs (RFC 9602)
		"fc00::/7",        // unique local (RFC 4193)
		"fe80::/10",       // link-local
		"fec0::/10",       // site-local, deprecated (RFC 3879)
		"ff00::/8",        // multicast
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
	global6   = netip.MustParsePrefix("2000::/3")
)

// PublicAddr reports whether ip is a globally routable unicast address that a
// box may reach without an explicit range. It is false for every block in
// the IANA special-purpose registries ([specialPurpose]: loopback, RFC 1918,
// CGNAT, link-local with the 169.254.169.254 metadata address, multicast,
// unspecified, IPv4-mapped, -compatible and -translated IPv6, NAT64
// local-use, documentation and benchmarking nets, 240/4, broadcast, unique-
// and site-local), and for IPv6 outside 2000::/3 (not allocated as global
// unicast). Addresses that carry an IPv4 address are judged by it: NAT64
// (64:ff9b::/96) and 6to4 (2002::/16) by the embedded address, Teredo
// (2001::/32) by both its server and its (obfuscated) client address.
func PublicAddr(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if ip.Is6() {
		b := ip.As16()
		switch {
		case nat64.Contains(ip):
			return PublicAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(ip):
			return PublicAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case teredo.Contains(ip):
			server := netip.AddrFrom4([4]byte{b[4], b[5], b[6], b[7]})
			client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
			return PublicAddr(server) && PublicAddr(client)
		case !global6.Contains(ip):
			return false
		}
	}
	if !ip.IsGlobalUnicast() || ip.IsPrivate() {
		return false
	}
	for _, p := range specialPurpose {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
