package config

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"golang.org/x/net/publicsuffix"

	"github.com/corral-dev/corral/core/egress"
)

// Risk is the grant check's verdict on one entry.
type Risk int

// Risks, from none to refused.
const (
	// RiskOK: the entry may be granted.
	RiskOK Risk = iota
	// RiskFlagged: the entry may be granted, and the user is told why it
	// deserves a second look (Verdict.Why).
	RiskFlagged
	// RiskRefused: no path of corral grants it (Verdict.Why says why).
	RiskRefused
)

func (r Risk) String() string {
	switch r {
	case RiskOK:
		return "ok"
	case RiskFlagged:
		return "flagged"
	}
	return "refused"
}

// MarshalText writes the risk's name, for --json.
func (r Risk) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a risk's name.
func (r *Risk) UnmarshalText(b []byte) error {
	for _, x := range []Risk{RiskOK, RiskFlagged, RiskRefused} {
		if string(b) == x.String() {
			*r = x
			return nil
		}
	}
	return fmt.Errorf("unknown risk %q", b)
}

// Verdict is the grant check's answer for one entry of one key.
type Verdict struct {
	Key string `json:"key"`
	// Entry is the canonical form when the entry parsed, else as given.
	Entry string `json:"entry"`
	Risk  Risk   `json:"risk"`
	// Why is one sentence for a flagged or refused entry; Fix, when set,
	// says what to grant instead.
	Why string `json:"why,omitempty"`
	Fix string `json:"fix,omitempty"`
	// Policy: the organisation's managed policy refused it (not corral's
	// own check).
	Policy bool `json:"policy,omitempty"`
}

// Err is nil unless the verdict refuses: then an error naming the key,
// the entry and the reason.
func (v Verdict) Err() error {
	if v.Risk != RiskRefused {
		return nil
	}
	return &GrantError{Verdict: v}
}

// GrantError is a refused grant.
type GrantError struct{ Verdict Verdict }

func (e *GrantError) Error() string {
	what := e.Verdict.Key
	if what == "egress" {
		what = "allow entry"
	}
	return fmt.Sprintf("%s %q: %s", what, e.Verdict.Entry, e.Verdict.Why)
}

// Hint is the verdict's Fix (core/hint prints it).
func (e *GrantError) Hint() string { return e.Verdict.Fix }

// ErrGrantRefused matches every GrantError (errors.Is).
var ErrGrantRefused = errors.New("grant refused")

// Is makes errors.Is(err, ErrGrantRefused) true.
func (e *GrantError) Is(target error) bool { return target == ErrGrantRefused }

// GrantContext is what the grant check needs from the config the entry
// would join.
type GrantContext struct {
	// LowHostPorts is the effective low_host_ports.
	LowHostPorts bool
	// Managed is the organisation's policy the entry must pass; nil: the
	// policy in force on this machine (SystemManaged).
	Managed *Managed
}

// GrantKeys are the keys CheckGrant judges: every list corral adds to on
// the user's behalf (AddToList) and every request a repository may make.
var GrantKeys = []string{"egress", "egress_groups", "ports", "toolchains", "packages"}

// Widest ranges a grant may name. IPv4 /16 (65,536 addresses) is one large
// site network; wider reaches networks that are no single service's, and
// the whole private blocks (10.0.0.0/8) are where a host's other networks
// live. IPv6 /48 is the standard end-site assignment (RFC 6177): wider
// spans more than one organisation's network. A narrower range serves any
// real service; network = "full" is the honest way to open everything.
const (
	WidestRange4 = 16
	WidestRange6 = 48
)

// CheckGrant is the one grant check. Every path that grants an entry calls
// it before anything is written (corral allow and the app's Allow through
// core/approval, corral approve, corral egress learn --apply and corral
// port through AddToList), and the allow-list (core/approval AllowList)
// drops what it refuses from any layer, so a refused entry is in force
// nowhere. key is one of GrantKeys.
//
// egress: the entry must parse (egress.ParseAllowEntry); no wildcard at or
// above a public suffix (*.com, *.co.uk, *.github.io); any port is
// flagged; a range is judged by [checkRange].
// egress_groups: a known group. ports: a port (ParsePort), with host ports
// below 1024 only under low_host_ports. toolchains: a known toolchain,
// flagged with what its registries let a box reach. packages: a Debian
// package name.
func CheckGrant(key, entry string, ctx GrantContext) Verdict {
	v := checkGrant(key, entry, ctx)
	if v.Risk == RiskRefused {
		return v
	}
	// The organisation's floor comes after corral's own check: what the
	// floor forbids is refused whatever else the entry is.
	m := ctx.Managed
	if m == nil {
		m = SystemManaged()
	}
	if why := m.refuseGrant(key, v.Entry); why != "" {
		v.Risk, v.Why, v.Fix, v.Policy = RiskRefused, why, "ask your organisation's administrator", true
	}
	return v
}

func checkGrant(key, entry string, ctx GrantContext) Verdict {
	v := Verdict{Key: key, Entry: entry}
	refuse := func(why string) Verdict { v.Risk, v.Why = RiskRefused, why; return v }
	switch key {
	case "egress":
		e, err := egress.ParseAllowEntry(entry)
		if err != nil {
			return refuse("not an allow-list entry: " + err.Error())
		}
		v.Entry = e.String()
		return checkEgress(v, e)
	case "egress_groups":
		if err := checkGroupName(entry); err != nil {
			return refuse("not an egress group; corral egress groups lists them")
		}
		return v
	case "ports":
		p, err := ParsePort(entry)
		if err != nil {
			return refuse(err.Error())
		}
		v.Entry = p.String()
		if p.Host < MinHostPort && !ctx.LowHostPorts {
			v = refuse(fmt.Sprintf("host port %d is below %d, where the system's services listen", p.Host, MinHostPort))
			v.Fix = fmt.Sprintf("set low_host_ports = true in your config to allow it, or forward %d:%d", p.Host+8000, p.Guest)
			return v
		}
		return v
	case "toolchains":
		if !slices.Contains(Toolchains, entry) {
			return refuse("unknown toolchain; use one of " + quoteList(Toolchains))
		}
		v.Risk, v.Why = RiskFlagged, toolchainReach[entry]
		return v
	case "packages":
		if !pkgRe().MatchString(entry) {
			return refuse(`not a Debian package name (use names like "ripgrep" or "jq=1.6-2")`)
		}
		return v
	}
	return refuse("not a list corral grants")
}

// toolchainReach says, per toolchain, what the golden image's registries
// for it (recorded at build: the "toolchains" egress group) let a box
// reach, and whether they can carry data out.
var toolchainReach = map[string]string{
	"go":     "its box may reach the Go module proxy and checksum database the image is configured for; the proxy fetches any module path from its origin, so a box can send data out through it",
	"node":   "its box may reach the npm registry the image is configured for; the registry accepts publishes, so a box holding a token can upload data to it",
	"python": "its box may reach the Python package index pip is configured for; the index accepts uploads, so a box holding a token can upload data to it",
	"rust":   "its box may reach the crates registry cargo is configured for; the registry accepts publishes, so a box holding a token can upload data to it",
}

func checkEgress(v Verdict, e egress.AllowEntry) Verdict {
	if e.IsRange() {
		v.Risk, v.Why = checkRange(e.Range)
		return v
	}
	if e.Wild {
		if ps, _ := publicsuffix.PublicSuffix(e.Host); ps == e.Host {
			v.Risk = RiskRefused
			v.Why = fmt.Sprintf("a wildcard over the public suffix %q would allow every domain registered under it", e.Host)
			v.Fix = fmt.Sprintf("allow one registrable domain and its subdomains instead, such as '*.example.%s', or exact hosts", e.Host)
			return v
		}
	}
	if e.AnyPort {
		v.Risk = RiskFlagged
		name := e.Host
		if e.Wild {
			name = "every name under " + e.Host
		}
		v.Why = fmt.Sprintf("allows every port of %s, not only the web's 80 and 443: ssh, databases and any other service listening there", name)
	}
	return v
}

// Address classes a range is judged by.
var (
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"), // most clouds' instance metadata
		netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud's
		netip.MustParseAddr("fd00:ec2::254"),   // AWS's, over IPv6
	}
	thisHost  = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/8"), netip.MustParsePrefix("::/128")}
	loopback  = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	linkLocal = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("fe80::/10")}
	private   = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("172.16.0.0/12"),
		netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"), netip.MustParsePrefix("fc00::/7")}
	// embeddings are IPv6 blocks whose addresses carry an IPv4 address at
	// bit offset at: a connection to one can reach that IPv4 address (Go
	// dials an IPv4-mapped address as IPv4; NAT64 and 6to4 gateways
	// translate).
	embeddings = []struct {
		block netip.Prefix
		at    int
		name  string
	}{
		{netip.MustParsePrefix("::ffff:0:0/96"), 96, "IPv4-mapped"},
		{netip.MustParsePrefix("::/96"), 96, "IPv4-compatible"},
		{netip.MustParsePrefix("::ffff:0:0:0/96"), 96, "IPv4-translated"},
		{netip.MustParsePrefix("64:ff9b::/96"), 96, "NAT64"},
		{netip.MustParsePrefix("2002::/16"), 16, "6to4"},
	}
	unspecOrLoop6 = netip.MustParsePrefix("::/127")
	// opaque embed IPv4 addresses where a range cannot say which.
	opaque = []struct {
		block netip.Prefix
		name  string
	}{
		{netip.MustParsePrefix("2001::/32"), "Teredo"},
		{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	}
)

// checkRange judges a CIDR range (config egress only: approvals never
// hold one). Refused: wider than WidestRange4/WidestRange6 (loopback
// aside: all of 127.0.0.0/8 is this computer), covering a
// cloud metadata address or the "this host" block, or (through an IPv6
// form that carries IPv4 addresses) any IPv4 range that would be refused.
// Flagged: covering loopback, link-local or private addresses, or other
// special-purpose blocks. A public range narrow enough is ok.
func checkRange(r netip.Prefix) (Risk, string) {
	r = r.Masked()
	widest, all, example := WidestRange4, "0.0.0.0/0", "/24"
	if r.Addr().Is6() {
		widest, all, example = WidestRange6, "::/0", "/64"
	}
	if r.Bits() == 0 {
		return RiskRefused, fmt.Sprintf("%s covers every address: use network = \"full\" to turn the filter off, or name the range of the service you need", all)
	}
	if r.Addr().Is6() {
		for _, o := range opaque {
			if r.Overlaps(o.block) {
				return RiskRefused, fmt.Sprintf("%s covers %s addresses (%s), which carry other IPv4 addresses a range cannot bound", r, o.name, o.block)
			}
		}
		for _, em := range embeddings {
			// :: and ::1 are IPv6's own unspecified and loopback
			// addresses, judged below, not IPv4-compatible forms.
			if !r.Overlaps(em.block) || r.Bits() >= 127 && unspecOrLoop6.Contains(r.Addr()) {
				continue
			}
			v4 := embedded(r, em.at)
			risk, why := checkRange(v4)
			if risk == RiskOK {
				continue
			}
			return max(risk, RiskFlagged), fmt.Sprintf("%s holds %s forms of %s: %s", r, em.name, v4, why)
		}
	}
	// Every address of 127.0.0.0/8 is this computer: its width reaches no
	// further than 127.0.0.1/32 does (flagged as loopback below).
	if r.Bits() < widest && !loopback[0].Contains(r.Addr()) {
		return RiskRefused, fmt.Sprintf("%s is wider than /%d and reaches networks that are no single service's; name the range of the service you need, such as a %s", r, widest, example)
	}
	for _, m := range metadataAddrs {
		if r.Contains(m) {
			return RiskRefused, fmt.Sprintf("%s covers %s, the cloud metadata address, which hands out the host's cloud credentials", r, m)
		}
	}
	if overlapsAny(r, thisHost) {
		return RiskRefused, fmt.Sprintf("%s covers the \"this host\" addresses (0.0.0.0/8, ::), through which a connection reaches this computer's own services; use 127.0.0.1/32 if you mean that", r)
	}
	var flags []string
	if overlapsAny(r, loopback) {
		flags = append(flags, "it reaches services on this computer (loopback), such as databases and other tools' local servers")
	}
	if overlapsAny(r, linkLocal) {
		flags = append(flags, "it reaches link-local addresses: devices on this computer's local link")
	}
	if overlapsAny(r, private) {
		flags = append(flags, "it reaches private addresses: machines of your local or company network, such as routers, printers and internal services")
	}
	if len(flags) == 0 && !egress.PublicAddr(r.Addr()) && !overlapsAny(r, loopback) {
		flags = append(flags, "it reaches special-purpose addresses (not public unicast)")
	}
	if len(flags) > 0 {
		return RiskFlagged, r.String() + ": " + strings.Join(flags, "; ")
	}
	return RiskOK, ""
}

// embedded is the IPv4 range the IPv6 range r (overlapping a block that
// embeds IPv4 at bit offset at) carries.
func embedded(r netip.Prefix, at int) netip.Prefix {
	b := r.Addr().As16()
	var a4 [4]byte
	copy(a4[:], b[at/8:at/8+4])
	bits := min(max(r.Bits()-at, 0), 32)
	return netip.PrefixFrom(netip.AddrFrom4(a4), bits).Masked()
}

func overlapsAny(r netip.Prefix, ps []netip.Prefix) bool {
	return slices.ContainsFunc(ps, r.Overlaps)
}

// CheckGrants runs CheckGrant over entries of key, in order.
func CheckGrants(key string, entries []string, ctx GrantContext) []Verdict {
	out := make([]Verdict, len(entries))
	for i, e := range entries {
		out[i] = CheckGrant(key, e, ctx)
	}
	return out
}

// Grantable returns the entries of verdicts that are not refused.
func Grantable(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		if v.Risk != RiskRefused {
			out = append(out, v.Entry)
		}
	}
	return out
}

// IgnoredEntry is an egress entry of a trusted layer (written by hand:
// corral never writes one) that the grant check refuses. The allow-list
// leaves it out; `corral config check` and `corral egress` report it.
type IgnoredEntry struct {
	File string `json:"file"`
	Verdict
}

// Ignored lists the egress entries of r's layers (and of the agents they
// define) that the grant check refuses.
func (r Result) Ignored() []IgnoredEntry {
	ctx := GrantContext{Managed: r.Managed}
	var out []IgnoredEntry
	for _, l := range r.Layers {
		for _, e := range l.Config.Egress {
			if v := CheckGrant("egress", e, ctx); v.Risk == RiskRefused {
				out = append(out, IgnoredEntry{File: l.Path, Verdict: v})
			}
		}
		for _, n := range SortedKeys(l.Config.Agents) {
			for _, e := range l.Config.Agents[n].Egress {
				if v := CheckGrant("egress", e, ctx); v.Risk == RiskRefused {
					v.Key = "agents." + n + ".egress"
					out = append(out, IgnoredEntry{File: l.Path, Verdict: v})
				}
			}
		}
	}
	return out
}
