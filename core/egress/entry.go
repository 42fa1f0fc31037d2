package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// AllowEntry is one allow-list entry, parsed: the one grammar of every
// allow-list corral reads or writes (the config's egress keys, approvals,
// learn proposals, the app's Allow, the broker's policy). It is either a
// name pattern with a port set or, for config only, a CIDR range.
//
//	host            exact name, ports 80 and 443
//	*.suffix        every name below suffix (not suffix itself)
//	host:port       one port; host:* any port (both also after *.suffix)
//	10.1.2.0/24     a range: private and IP-literal destinations in it
//
// Names are DNS names: labels of letters, digits, '-' and '_' (DNS allows
// '_', and real hosts use it; the broker always matched it), at most 63
// bytes each and 253 in all, with a non-numeric last label. Case and a
// trailing dot do not matter; Unicode names become punycode.
type AllowEntry struct {
	// Host is the canonical name (lowercase ASCII, no trailing dot, no
	// "*." prefix); empty for a range.
	Host string
	// Wild: the entry is "*.Host".
	Wild bool
	// Port is the one port allowed; 0 with AnyPort false means 80 and 443.
	Port    int
	AnyPort bool
	// Range is set (valid) for a CIDR entry, masked.
	Range netip.Prefix
}

// IsRange reports whether e is a CIDR range.
func (e AllowEntry) IsRange() bool { return e.Range.IsValid() }

// String is the canonical form. ParseAllowEntry(e.String()) gives e back.
func (e AllowEntry) String() string {
	if e.IsRange() {
		return e.Range.String()
	}
	return canonicalEntry(e.Host, e.Port, e.AnyPort, e.Wild)
}

// ParseAllowEntry parses one allow-list entry of the grammar [AllowEntry] describes,
// surrounding blanks ignored. A range must be written as CIDR ("/n"); its
// address bits below the prefix are dropped (10.1.2.3/24 is 10.1.2.0/24).
func ParseAllowEntry(s string) (AllowEntry, error) {
	s = strings.TrimSpace(s)
	if addr, _, ok := strings.Cut(s, "/"); ok && validAddr(addr) {
		pfx, err := netip.ParsePrefix(s)
		if err != nil {
			return AllowEntry{}, fmt.Errorf("not a CIDR range (want such as 10.1.2.0/24): %w", err)
		}
		if pfx.Addr().Zone() != "" {
			return AllowEntry{}, errors.New("zones are not supported in a range")
		}
		return AllowEntry{Range: pfx.Masked()}, nil
	}
	host, port, anyPort, wild, err := parseEntry(s)
	if err != nil {
		return AllowEntry{}, err
	}
	return AllowEntry{Host: host, Port: port, AnyPort: anyPort, Wild: wild}, nil
}

// CanonicalEntry is ParseAllowEntry(s).String(), with the error naming s.
func CanonicalEntry(s string) (string, error) {
	e, err := ParseAllowEntry(s)
	if err != nil {
		return "", fmt.Errorf("allow entry %q: %w", s, err)
	}
	return e.String(), nil
}

// PortText is how a sentence names the ports e allows: "ports 80 and
// 443", "port 8443", "every port".
func (e AllowEntry) PortText() string {
	switch {
	case e.AnyPort:
		return "every port"
	case e.Port != 0:
		return "port " + strconv.Itoa(e.Port)
	}
	return "ports 80 and 443"
}

func validAddr(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

// EntryFor is the allow-list entry that allows a connection to host on
// port, as a denial recorded it: the host alone for the ports an entry
// without a port allows (80 and 443; 0 when the port is unknown), else
// host:port; an IP address is its one-address range (IP literals are not
// host entries). What the menu's and a notification's Allow grant for a
// denial.
func EntryFor(host string, port int) string {
	if ip := net.ParseIP(host); ip != nil {
		if ip.To4() != nil {
			return ip.String() + "/32"
		}
		return ip.String() + "/128"
	}
	if port == 0 || port == 80 || port == 443 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
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

// OneHost reports whether e names one host: no range, wildcard or any
// port. What a box may ask for and what the menu offers to allow for one.
func (e AllowEntry) OneHost() bool { return !e.IsRange() && !e.Wild && !e.AnyPort }

// RegistrableDomain is host's registrable domain (eTLD+1: "example.test"
// for "api.example.test", "example.co.uk" for "a.b.example.co.uk"), or ""
// for an IP address and a name without one. How learn proposals group
// hosts and the domain the menu's "Allow *.domain" offers.
func RegistrableDomain(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return ""
	}
	return d
}

// DomainEntry is the entry that allows every name below domain
// ("*.domain"), in canonical form; "" when domain is no host name.
func DomainEntry(domain string) string {
	e, err := ParseAllowEntry("*." + domain)
	if err != nil || !e.Wild || e.Port != 0 || e.AnyPort {
		return ""
	}
	return e.String()
}
