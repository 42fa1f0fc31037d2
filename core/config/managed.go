package config

// The managed layer: a company's floor above every layer of the user's.
//
// An administrator installs it (Linux and unmanaged Macs: the file
// DefaultManagedPath; managed Macs: a configuration profile's managed
// preferences for corral's bundle id, ManagedBundleID). It is not a layer
// of Config keys merged with the others: it has its own schema (Floor),
// and it is applied after the merge, so no layer of the user's, no
// repository file, no approval and no live allow can lower it:
//
//   - Load clamps the effective config to the floor (applyManaged) and
//     reports every value a layer set that the floor forbids, naming the
//     managed file: `corral config check` refuses it;
//   - CheckGrant, the one grant check, refuses what the floor forbids
//     (denied hosts and ranges, any repository request when repositories
//     may request nothing): `corral allow`, `approve`, `egress learn
//     --apply` and the menu's Allow all go through it, and the broker's
//     allow-list drops whatever it refuses from any layer or approval;
//   - core/approval asks CheckApproval for the scope and duration of a
//     live grant.
//
// docs/ORGANISATIONS.md is the administrator's guide.

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/egress"
)

// DefaultManagedPath is the managed file on Linux and on Macs without a
// configuration profile.
const DefaultManagedPath = "/etc/corral/managed.toml"

// ManagedEnv, when set, is the managed file's path instead of
// DefaultManagedPath (tests; an administrator who keeps it elsewhere sets
// it system-wide, where a user's shell cannot unset it for the app).
const ManagedEnv = "CORRAL_MANAGED_CONFIG"

// ManagedBundleID is the bundle id whose managed preferences a
// configuration profile sets on macOS (Info.plist CFBundleIdentifier).
const ManagedBundleID = "dev.corral.Corral"

// Floor is the managed file's schema. Every key is optional; an unset key
// forbids nothing.
type Floor struct {
	// MaxNetwork is the most open network mode a box may have
	// (NetworkOrder: full < learn < broker < offline).
	MaxNetwork *Network `toml:"max_network"`
	// DenyEgress are hosts (host, *.suffix) and ranges (CIDR) no layer,
	// request or approval may allow: an allow entry that overlaps one is
	// refused.
	DenyEgress []string `toml:"deny_egress"`
	// AllowCredentials, when set, are the only [credentials.NAME] that may
	// be brokered; DenyCredentials may never be.
	AllowCredentials []string `toml:"allow_credentials"`
	DenyCredentials  []string `toml:"deny_credentials"`
	// GitShadow and Profile, when set, are forced.
	GitShadow *bool    `toml:"git_shadow"`
	Profile   *Profile `toml:"profile"`
	// MaxApproval is the longest a live approval (corral allow, the
	// menu's Allow) may last: "always" is refused, "--for" at most this.
	MaxApproval *Duration `toml:"max_approval"`
	// RepoRequests = false: a repository's .corral.toml may request
	// nothing (every request is refused).
	RepoRequests *bool `toml:"repo_requests"`
	// Audit forwards every audit event to a collector on this host.
	Audit *ManagedAudit `toml:"audit"`
}

// ManagedAudit is the managed file's [audit] table.
type ManagedAudit struct {
	// Forward is where events go: "syslog+udp://127.0.0.1:514",
	// "syslog+tcp://127.0.0.1:601" (RFC 5424, octet-counted over TCP) or
	// "http://127.0.0.1:8088/path" (one POST per event). Loopback only:
	// corral forwards to a collector on this host, which ships them on.
	Forward string `toml:"forward"`
	// Format is "ocsf" (the default) or "corral" (corral.audit-event/v1).
	Format string `toml:"format"`
}

// Managed is the policy in force: its source and its floor. A nil
// *Managed or a zero Floor forbids nothing.
type Managed struct {
	// File names the source: the file's path, or "managed preferences
	// dev.corral.Corral (PATH)" for a configuration profile.
	File  string
	Floor Floor
	// Err is why the source did not load: then every grant is refused
	// (fail closed) and Load reports it.
	Err error
}

// Origin is what `config show --origin` names for a key the policy set.
func (m *Managed) Origin() string { return "managed: " + m.File }

// policy is the phrase every refusal starts its reason with.
func (m *Managed) policy() string {
	return fmt.Sprintf("the organisation's policy (%s)", m.File)
}

// ManagedPath is the managed file to read: $CORRAL_MANAGED_CONFIG or
// DefaultManagedPath.
func ManagedPath() string {
	if p := os.Getenv(ManagedEnv); p != "" {
		return p
	}
	return DefaultManagedPath
}

// ParseManaged decodes a managed file strictly (every key exactly a Floor
// name, else an error naming file:line:key) and validates its values.
func ParseManaged(path string, data []byte) (*Managed, error) {
	m := &Managed{File: path}
	if len(data) > MaxFileSize {
		return nil, &ParseError{File: path, Err: fmt.Errorf("larger than %d bytes", MaxFileSize)}
	}
	if !isUTF8(data) {
		return nil, &ParseError{File: path, Err: errors.New("not valid UTF-8")}
	}
	if perr := checkNesting(data, MaxNesting); perr != nil {
		perr.File = path
		return nil, perr
	}
	lines, errs := decodeStrictValue(path, data, &m.Floor)
	errs = append(errs, m.validate(lines)...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadManaged reads the managed file at path; a missing file is no policy
// (nil, nil). So is a file in a directory the user cannot search (stat
// itself is refused: whether a file is there cannot be known): /etc/corral
// is also where a box keeps corral's own files, and a host that ran guest
// scripts may have it private to root. An administrator deploys the
// directory searchable and the file readable (docs/ORGANISATIONS.md); a
// file that is there but cannot be read, or does not decode, is in force
// as an error (fail closed).
func LoadManaged(path string) (*Managed, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrPermission) {
		return nil, nil
	}
	data, err := readLayerFile(path)
	if err != nil || data == nil {
		return nil, err
	}
	return ParseManaged(path, data)
}

func (m *Managed) validate(lines map[string]int) []error {
	var errs []error
	bad := func(key, value, reason string) {
		errs = append(errs, &Violation{File: m.File, Line: lines[key], Key: key, Value: value, Reason: reason})
	}
	f := &m.Floor
	if f.MaxNetwork != nil && !slices.Contains(NetworkOrder, string(*f.MaxNetwork)) {
		bad("max_network", string(*f.MaxNetwork), "want one of "+quoteList(NetworkOrder))
	}
	if f.Profile != nil && !slices.Contains(ProfileOrder, string(*f.Profile)) {
		bad("profile", string(*f.Profile), "want one of "+quoteList(ProfileOrder))
	}
	for _, e := range f.DenyEgress {
		if _, err := egress.ParseAllowEntry(e); err != nil {
			bad("deny_egress", fmt.Sprintf("%q", e), "not a host, *.suffix or CIDR range: "+err.Error())
		}
	}
	if f.Audit != nil {
		if _, err := ParseForward(f.Audit.Forward); err != nil {
			bad("audit", fmt.Sprintf("forward = %q", f.Audit.Forward), err.Error())
		}
		if f.Audit.Format != "" && f.Audit.Format != "ocsf" && f.Audit.Format != "corral" {
			bad("audit", fmt.Sprintf("format = %q", f.Audit.Format), `want "ocsf" or "corral"`)
		}
	}
	return errs
}

// Forward is a parsed [audit] forward: Scheme is "syslog+udp",
// "syslog+tcp" or "http"; Addr is host:port on loopback; URL is the
// whole URL for http.
type Forward struct {
	Scheme, Addr, URL string
}

// ParseForward reads an [audit] forward URL. Only a collector on this
// host's loopback is accepted: corral never sends its audit off the host
// itself.
func ParseForward(s string) (Forward, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return Forward{}, errors.New(`want "syslog+udp://127.0.0.1:514", "syslog+tcp://127.0.0.1:601" or "http://127.0.0.1:PORT/PATH"`)
	}
	switch u.Scheme {
	case "syslog+udp", "syslog+tcp", "http":
	default:
		return Forward{}, fmt.Errorf("scheme %q: want syslog+udp, syslog+tcp or http", u.Scheme)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		return Forward{}, errors.New("name the collector's port")
	}
	ip, err := netip.ParseAddr(host)
	if host != "localhost" && (err != nil || !ip.IsLoopback()) {
		return Forward{}, fmt.Errorf("host %q: the collector must listen on this host's loopback (127.0.0.1 or ::1)", host)
	}
	return Forward{Scheme: u.Scheme, Addr: net.JoinHostPort(host, port), URL: s}, nil
}

// ChooseManaged is the one rule of which source is in force on macOS: a
// configuration profile's managed preferences win over the file (MDM is
// what a company enforces; the file is for unmanaged Macs and Linux). A
// source that exists but does not load is in force as an error: the
// policy fails closed, never falls back to a weaker source.
func ChooseManaged(profile *Managed, profileErr error, file *Managed, fileErr error) *Managed {
	switch {
	case profileErr != nil:
		return &Managed{File: "managed preferences " + ManagedBundleID, Err: profileErr}
	case profile != nil:
		return profile
	case fileErr != nil:
		return &Managed{File: ManagedPath(), Err: fileErr}
	}
	return file
}

// systemCache holds the system policy, read again when its file changes.
var systemCache struct {
	sync.Mutex
	key string
	m   *Managed
}

// SystemManaged is the policy in force on this machine (see
// systemManaged in managed_darwin.go and managed_other.go for the
// sources), or an empty one. It is read again when the source's size or
// time changes, so a long-running broker or app follows an update.
func SystemManaged() *Managed {
	key := managedStamp()
	systemCache.Lock()
	defer systemCache.Unlock()
	if systemCache.m != nil && systemCache.key == key {
		return systemCache.m
	}
	m := systemManaged()
	if m == nil {
		m = &Managed{}
	}
	systemCache.key, systemCache.m = key, m
	return m
}

// managedStamp identifies the file source's version.
func managedStamp() string {
	p := ManagedPath()
	st, err := os.Stat(p)
	if err != nil {
		return p + ":missing" + profileStamp()
	}
	return fmt.Sprintf("%s:%d:%d%s", p, st.Size(), st.ModTime().UnixNano(), profileStamp())
}

// loadManagedFile is the file source as ChooseManaged takes it.
func loadManagedFile() (*Managed, error) { return LoadManaged(ManagedPath()) }

// active reports whether m holds a policy.
func (m *Managed) active() bool { return m != nil && (m.File != "" || m.Err != nil) }

// refuseGrant is the floor's verdict on a grant of entry to key, or "".
func (m *Managed) refuseGrant(key, entry string) string {
	if !m.active() {
		return ""
	}
	if m.Err != nil {
		return fmt.Sprintf("%s does not load, so nothing may be granted: %v", m.policy(), m.Err)
	}
	if key != "egress" {
		return ""
	}
	e, err := egress.ParseAllowEntry(entry)
	if err != nil {
		return ""
	}
	for _, d := range m.Floor.DenyEgress {
		de, err := egress.ParseAllowEntry(d)
		if err != nil {
			continue
		}
		if entriesOverlap(e, de) {
			return fmt.Sprintf("%s never allows %s", m.policy(), de.String())
		}
	}
	return ""
}

// entriesOverlap reports whether allowing a could reach something b
// names: the same host, a wildcard covering the other's host, or
// overlapping ranges. Ports do not matter: a denied host is denied on
// every port. A host entry and a range never overlap by name (the
// broker denies private ranges by address unless a range is allowed).
func entriesOverlap(a, b egress.AllowEntry) bool {
	if a.IsRange() || b.IsRange() {
		return a.IsRange() && b.IsRange() && a.Range.Overlaps(b.Range)
	}
	covers := func(w egress.AllowEntry, h string) bool {
		return w.Wild && (h == w.Host || strings.HasSuffix(h, "."+w.Host))
	}
	return a.Host == b.Host || covers(a, b.Host) || covers(b, a.Host)
}

// DenyEntries are the floor's deny_egress, parsed, for the broker's
// policy (egress.Policy.Deny): what no grant can allow is refused at the
// connection too, by name and by the address a name resolves to.
func (m *Managed) DenyEntries() []egress.AllowEntry {
	if !m.active() {
		return nil
	}
	var out []egress.AllowEntry
	for _, d := range m.Floor.DenyEgress {
		if e, err := egress.ParseAllowEntry(d); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// CheckApproval refuses a live approval of scope ("always", "session",
// "once", "for") and duration d the floor forbids. A session's and a
// single connection's approvals end with them and are allowed.
func (m *Managed) CheckApproval(scope string, d time.Duration) error {
	if !m.active() {
		return nil
	}
	if m.Err != nil {
		return fmt.Errorf("%s does not load, so nothing may be granted: %w", m.policy(), m.Err)
	}
	if m.Floor.MaxApproval == nil || m.Floor.MaxApproval.Duration == 0 {
		return nil
	}
	limit := m.Floor.MaxApproval.Duration
	switch {
	case scope == "always":
		return &PolicyError{Managed: m, Msg: fmt.Sprintf("approvals last at most %s: use --for %s or --session", limit, limit)}
	case scope == "for" && d > limit:
		return &PolicyError{Managed: m, Msg: fmt.Sprintf("approvals last at most %s; --for %s is longer", limit, d)}
	}
	return nil
}

// ApprovalExpiry caps an approval made at added that expires at expires
// (zero: never) to the floor's max_approval: an approval written before
// the policy, or by hand, lasts no longer than one granted under it.
func (m *Managed) ApprovalExpiry(added, expires time.Time) time.Time {
	if !m.active() || m.Floor.MaxApproval == nil || m.Floor.MaxApproval.Duration == 0 {
		return expires
	}
	limit := added.Add(m.Floor.MaxApproval.Duration)
	if expires.IsZero() || expires.After(limit) {
		return limit
	}
	return expires
}

// PolicyError is a refusal by the organisation's policy.
type PolicyError struct {
	Managed *Managed
	Msg     string
}

func (e *PolicyError) Error() string { return e.Managed.policy() + " refuses it: " + e.Msg }

// IsPolicyRefusal reports whether err is a refusal by the organisation's
// managed policy (a live approval's scope or duration, or an entry the
// floor denies): such a refusal is recorded in the audit log, for the
// organisation's SIEM, where a malformed request is only an error.
func IsPolicyRefusal(err error) bool {
	var pe *PolicyError
	var ge *GrantError
	return errors.As(err, &pe) || errors.As(err, &ge) && ge.Verdict.Policy
}

// RepoRequestsRefused is why the floor refuses every repository request,
// or "".
func (m *Managed) RepoRequestsRefused() string {
	if !m.active() || m.Floor.RepoRequests == nil || *m.Floor.RepoRequests {
		return ""
	}
	return m.policy() + " lets no repository request anything"
}

// CredentialRefused is why the floor refuses brokering the credential
// name, or "".
func (m *Managed) CredentialRefused(name string) string {
	if !m.active() {
		return ""
	}
	if slices.Contains(m.Floor.DenyCredentials, name) {
		return fmt.Sprintf("%s never brokers the credential %q", m.policy(), name)
	}
	if m.Floor.AllowCredentials != nil && !slices.Contains(m.Floor.AllowCredentials, name) {
		return fmt.Sprintf("%s brokers only the credentials %s", m.policy(), quoteList(m.Floor.AllowCredentials))
	}
	return ""
}

// applyManaged clamps eff to m's floor and returns a violation for every
// value a layer other than the defaults set that the floor forbids. Forced
// keys and clamped values name the policy as their origin.
func applyManaged(m *Managed, eff *Effective, layers []Layer) []error {
	if !m.active() {
		return nil
	}
	if m.Err != nil {
		return []error{m.Err}
	}
	c := &eff.Config
	var errs []error
	userSet := func(key string) bool {
		return slices.ContainsFunc(eff.Origin[key], func(o string) bool { return o != "default" })
	}
	violate := func(key, value, reason, fix string) {
		errs = append(errs, &Violation{File: strings.Join(eff.Origin[key], ", "), Key: key, Value: value,
			Reason: reason, Fix: fix, Never: true})
	}
	f := &m.Floor
	// A forced key is the policy's whatever the layers say: its origin is
	// the policy even where a layer happens to agree.
	if f.Profile != nil {
		if val(c.Profile) != *f.Profile && userSet("profile") {
			violate("profile", fmt.Sprintf("%q", val(c.Profile)), fmt.Sprintf("%s sets profile = %q", m.policy(), *f.Profile), "remove the line")
		}
		c.Profile = ptr(*f.Profile)
		eff.Origin["profile"] = []string{m.Origin()}
	}
	if f.GitShadow != nil {
		if (c.GitShadow == nil || *c.GitShadow != *f.GitShadow) && userSet("git_shadow") {
			violate("git_shadow", fmt.Sprint(c.GitShadow != nil && *c.GitShadow), fmt.Sprintf("%s sets git_shadow = %t", m.policy(), *f.GitShadow), "remove the line")
		}
		c.GitShadow = ptr(*f.GitShadow)
		eff.Origin["git_shadow"] = []string{m.Origin()}
	}
	if f.MaxNetwork != nil && c.Network != nil &&
		slices.Index(NetworkOrder, string(*c.Network)) < slices.Index(NetworkOrder, string(*f.MaxNetwork)) {
		if userSet("network") {
			violate("network", fmt.Sprintf("%q", *c.Network), fmt.Sprintf("%s allows at most network = %q", m.policy(), *f.MaxNetwork),
				fmt.Sprintf("set network = %q or stricter", *f.MaxNetwork))
		}
		c.Network = ptr(*f.MaxNetwork)
		eff.Origin["network"] = append(eff.Origin["network"], m.Origin())
	}
	if len(c.Egress) > 0 {
		kept := c.Egress[:0:0]
		for _, e := range c.Egress {
			if why := m.refuseGrant("egress", e); why != "" {
				errs = append(errs, &Violation{File: layerHolding(layers, "egress", e), Key: "egress", Value: fmt.Sprintf("%q", e),
					Reason: why, Fix: "remove the entry", Never: true})
				continue
			}
			kept = append(kept, e)
		}
		c.Egress = kept
	}
	for _, n := range SortedKeys(c.Credentials) {
		if why := m.CredentialRefused(n); why != "" {
			errs = append(errs, &Violation{File: layerHolding(layers, "credentials", n), Key: "credentials." + n,
				Reason: why, Fix: "remove the table", Never: true})
			delete(c.Credentials, n)
		}
	}
	return errs
}

// layerHolding names the layers that hold entry in key (a list entry or a
// table's name).
func layerHolding(layers []Layer, key, entry string) string {
	var files []string
	for _, l := range layers {
		switch key {
		case "egress":
			if slices.ContainsFunc(l.Config.Egress, func(x string) bool { return sameEntry(x, entry) }) {
				files = appendOnce(files, l.Path)
			}
		case "credentials":
			if _, ok := l.Config.Credentials[entry]; ok {
				files = appendOnce(files, l.Path)
			}
		}
	}
	return strings.Join(files, ", ")
}
