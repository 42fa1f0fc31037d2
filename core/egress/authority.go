package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Authority is a parsed, canonical request target: "host:port" of a CONNECT
// request or the host part of an absolute URI.
type Authority struct {
	// Host is the canonical host: a lowercase ASCII (punycode) name without a
	// trailing dot, or the textual form of IP when the target is an IP literal.
	Host string
	Port int
	// IP is set when the target is an IP literal.
	IP netip.Addr
}

// String returns host:port, with IPv6 literals in brackets.
func (a Authority) String() string {
	if a.IP.IsValid() {
		return netip.AddrPortFrom(a.IP, uint16(a.Port)).String()
	}
	return a.Host + ":" + strconv.Itoa(a.Port)
}

// AuthorityError reports a request target that was rejected while parsing.
// Reason is [ReasonMalformedAuthority] or [ReasonUserinfo].
type AuthorityError struct {
	Input  string
	Reason Reason
	Detail string
}

func (e *AuthorityError) Error() string {
	return fmt.Sprintf("parsing authority %q: %s: %s", e.Input, e.Reason, e.Detail)
}

// ParseAuthority parses a request authority "host[:port]". defaultPort is
// used when the port is missing; 0 makes the port mandatory (CONNECT).
// Userinfo ("user@host") and anything that is neither a valid hostname nor a
// plain IP literal are rejected with an [*AuthorityError].
func ParseAuthority(s string, defaultPort int) (Authority, error) {
	bad := func(r Reason, detail string) (Authority, error) {
		return Authority{}, &AuthorityError{Input: s, Reason: r, Detail: detail}
	}
	if strings.Contains(s, "@") {
		return bad(ReasonUserinfo, "userinfo is not allowed")
	}
	if s == "" || len(s) > 300 {
		return bad(ReasonMalformedAuthority, "empty or too long")
	}
	host, portStr, hasPort, err := splitHostPort(s)
	if err != nil {
		return bad(ReasonMalformedAuthority, err.Error())
	}
	port := defaultPort
	if hasPort {
		port, err = parsePort(portStr)
		if err != nil {
			return bad(ReasonMalformedAuthority, err.Error())
		}
	} else if defaultPort == 0 {
		return bad(ReasonMalformedAuthority, "port required")
	}
	a := Authority{Port: port}
	if strings.HasPrefix(host, "[") {
		ip, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return bad(ReasonMalformedAuthority, "invalid IPv6 literal")
		}
		a.IP, a.Host = ip, ip.String()
		return a, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !ip.Is4() {
			return bad(ReasonMalformedAuthority, "IPv6 literal needs brackets")
		}
		a.IP, a.Host = ip, ip.String()
		return a, nil
	}
	name, err := canonicalHost(host)
	if err != nil {
		return bad(ReasonMalformedAuthority, err.Error())
	}
	a.Host = name
	return a, nil
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port".
func splitHostPort(s string) (host, port string, hasPort bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, errors.New("missing ']'")
		}
		host, rest := s[:end+1], s[end+1:]
		if rest == "" {
			return host, "", false, nil
		}
		if rest[0] != ':' {
			return "", "", false, errors.New("junk after ']'")
		}
		return host, rest[1:], true, nil
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false, nil
	}
	if strings.IndexByte(s[:i], ':') >= 0 {
		return "", "", false, errors.New("too many colons (IPv6 literals need brackets)")
	}
	return s[:i], s[i+1:], true, nil
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 {
		return 0, errors.New("invalid port")
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errors.New("invalid port")
		}
		n = n*10 + int(c-'0')
	}
	if n < 1 || n > 65535 {
		return 0, errors.New("port out of range")
	}
	return n, nil
}

// canonicalHost lowercases a hostname, strips one trailing dot, converts
// Unicode names to punycode with the IDNA lookup profile and validates the
// labels. Plain ASCII names take a fast path; underscores are accepted there
// because they occur in real DNS names. A name whose last label is numeric is
// rejected: it is no DNS name, and some resolvers read it as an IPv4 shorthand
// such as "127.1".
func canonicalHost(h string) (string, error) {
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", errors.New("empty host")
	}
	ascii := true
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		h = strings.ToLower(h)
	}
	if !ascii || strings.Contains(h, "xn--") {
		if !utf8.ValidString(h) {
			return "", errors.New("invalid UTF-8 in name")
		}
		a, err := idna.Lookup.ToASCII(h)
		if err != nil {
			return "", fmt.Errorf("invalid international name: %w", err)
		}
		// The result must itself be valid: that makes the canonical form
		// stable and rejects inputs that only map to broken punycode.
		if again, err := idna.Lookup.ToASCII(a); err != nil || again != a {
			return "", fmt.Errorf("invalid international name %q", a)
		}
		h = a
	}
	if len(h) > 253 {
		return "", errors.New("name too long")
	}
	last := ""
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 {
			return "", errors.New("empty or too long label")
		}
		// A DNS label neither starts nor ends with '-'; refusing it also
		// keeps every name from reading as a command-line option
		// ("--revoke") where a name is passed on as an argument.
		if label[0] == '-' || label[len(label)-1] == '-' {
			return "", fmt.Errorf("label %q starts or ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return "", fmt.Errorf("invalid character %q", c)
			}
		}
		last = label
	}
	if numericLabel(last) {
		return "", errors.New("numeric top-level label (not a DNS name)")
	}
	return h, nil
}

func numericLabel(l string) bool {
	if strings.HasPrefix(l, "0x") {
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}
