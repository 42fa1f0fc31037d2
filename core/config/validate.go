package config

import (
	"errors"
	"fmt"
	"github.com/corral-dev/corral/core/remote"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/agent"

	"github.com/corral-dev/corral/core/egress"
)

// ErrViolation marks every config problem that must stop a box-acting
// command (exit code 2): malformed files, invalid values, and policy
// violations.
var ErrViolation = errors.New("config violation")

// Violation is one refused key, naming the file, key and value, and what
// to do instead.
type Violation struct {
	File       string
	Line       int // 0: unknown
	Key, Value string
	Reason     string
	Fix        string
	// Lines, for a repository's value the user may grant, is the TOML the
	// trusted layer needs (Fix says where it goes); Never marks a
	// repository's value no layer of the user's can grant. Both come from
	// the trust check (judgeRepoKey).
	Lines string
	Never bool
}

func (v *Violation) Error() string {
	var b strings.Builder
	b.WriteString(v.File)
	if v.Line > 0 {
		b.WriteString(":" + strconv.Itoa(v.Line))
	}
	if v.Key != "" {
		b.WriteString(": " + v.Key)
		if v.Value != "" {
			b.WriteString(" = " + v.Value)
		}
	}
	b.WriteString(": " + v.Reason)
	if v.Fix != "" {
		b.WriteString("\n  fix: " + strings.ReplaceAll(v.Fix, "\n", "\n       "))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrViolation) true.
func (v *Violation) Is(target error) bool { return target == ErrViolation }

// Is makes parse errors count as violations.
func (e *ParseError) Is(target error) bool { return target == ErrViolation }

// ParseSize parses "4GiB", "512MiB", "2G" or a plain byte count. Units
// are binary, as in Lima.
func ParseSize(s string) (uint64, error) {
	m := sizeRe().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("invalid size %q: use a number and a unit such as \"4GiB\"", s)
	}
	n, err := strconv.ParseFloat(m[1], 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("invalid size %q: must be positive", s)
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[strings.ToLower(m[2])]
	v := n * mult
	if v > 1<<50 {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return uint64(v), nil
}

// The patterns are compiled on first use, not at init: every process of the
// binary pays for package initialisers, including the guest-conn that qemu
// starts per guest connection (issue 18; BenchmarkGuestConnProcess). The
// bounded repetitions ({0,61}) make these programs large.
var sizeRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([KMGTkmgtBb]?)(?:i?[Bb])?$`)
})

var (
	envNameRe  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	hostnameRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	})
	// terminalRe: an app name for `open -a` or a command name, never a path or options.
	terminalRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9 ._+-]{0,63}$`) })
	pkgRe      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$`) })
)

// validate checks the values a layer sets, whatever its trust, and
// returns one Violation per problem.
func validate(l Layer) []error {
	c := &l.Config
	var errs []error
	bad := func(key, value, reason, fix string) {
		errs = append(errs, &Violation{File: l.Path, Line: l.line(key), Key: key, Value: value, Reason: reason, Fix: fix})
	}
	oneOf := func(key string, v *string, allowed []string) {
		if v != nil && !slices.Contains(allowed, *v) {
			bad(key, strconv.Quote(*v), "unknown value", "use one of "+quoteList(allowed))
		}
	}
	if c.CPUs != nil && *c.CPUs < 1 {
		bad("cpus", strconv.Itoa(*c.CPUs), "must be at least 1", "")
	}
	for _, kv := range []struct {
		key string
		v   *string
	}{{"memory", c.Memory}, {"disk", c.Disk}} {
		if kv.v != nil {
			if _, err := ParseSize(*kv.v); err != nil {
				bad(kv.key, strconv.Quote(*kv.v), err.Error(), "")
			}
		}
	}
	oneOf("vm_type", str(c.VMType), VMTypes)
	oneOf("mount_type", str(c.MountType), MountTypes)
	oneOf("source", str(c.Source), SourceOrder)
	oneOf("network", str(c.Network), NetworkOrder)
	if c.Agent != nil && !agent.ValidName(*c.Agent) {
		bad("agent", strconv.Quote(*c.Agent), "not an agent name", "use one of "+quoteList(agent.Builtins())+" or a name defined under [agents]")
	}
	oneOf("agent_state", str(c.AgentState), AgentStateOrder)
	if c.Host != nil {
		if err := remote.CheckName(*c.Host); err != nil {
			bad("host", strconv.QuoteToASCII(*c.Host), err.Error(), "use a name from corral host ls")
		}
	}
	oneOf("profile", str(c.Profile), ProfileOrder)
	oneOf("agent_credentials", str(c.AgentCreds), AgentCredentialsOrder)
	oneOf("claude_install", str(c.ClaudeInstall), ClaudeInstalls)
	oneOf("snapshots", str(c.Snapshots), SnapshotModes)
	oneOf("idle_action", str(c.IdleAction), IdleActions)
	if v := c.SaveFreeBelow; v != nil && strings.TrimSpace(*v) != "0" {
		if _, err := ParseSize(*v); err != nil {
			bad("save_when_free_below", strconv.Quote(*v), err.Error(), `a size such as "2GiB", or "0" for off`)
		}
	}
	for _, kv := range []struct {
		key   string
		paths []string
	}{{"hide", c.Hide}, {"box_dirs", c.BoxDirs}} {
		if len(kv.paths) > MaxProjectPaths {
			bad(kv.key, strconv.Itoa(len(kv.paths))+" entries", fmt.Sprintf("at most %d", MaxProjectPaths), "")
		}
		for _, p := range kv.paths {
			if err := CheckProjectPath(p); err != nil {
				bad(kv.key, strconv.Quote(p), err.Error(), "name a path inside the project with letters, digits and . _ - + @ only, such as \"node_modules\" or \"secrets/.env\"")
			}
		}
	}
	if c.SnapshotsKeep != nil && (*c.SnapshotsKeep < 1 || *c.SnapshotsKeep > 100) {
		bad("snapshots_keep", strconv.Itoa(*c.SnapshotsKeep), "must be between 1 and 100", "")
	}
	if c.HoldDenied != nil && (c.HoldDenied.Duration < 0 || c.HoldDenied.Duration > MaxHoldDenied) {
		bad("hold_denied", strconv.Quote(c.HoldDenied.String()), "must be between 0 and "+MaxHoldDenied.String(), `use a hold such as "30s", or "0" to answer denials at once`)
	}
	if c.Terminal != nil && !ValidTerminal(*c.Terminal) {
		bad("terminal", strconv.Quote(*c.Terminal), "not an app or command name", `use a name such as "Terminal", "iTerm2" or "Ghostty"`)
	}
	checkProjectRoots(c.ProjectRoots, bad)
	checkUpstreamProxy(c.UpstreamProxy, bad)
	if c.Image != nil && strings.TrimSpace(*c.Image) == "" {
		bad("image", `""`, "must not be empty", "remove the key to use the default image")
	}
	for _, t := range c.Toolchains {
		if !slices.Contains(Toolchains, t) {
			bad("toolchains", strconv.Quote(t), "unknown toolchain", "use one of "+quoteList(Toolchains))
		}
	}
	for _, p := range c.Packages {
		if !pkgRe().MatchString(p) {
			bad("packages", strconv.Quote(p), "not a Debian package name", "use names like \"ripgrep\" or \"jq=1.6-2\"")
		}
	}
	for _, e := range c.Egress {
		if err := CheckEgressEntry(e); err != nil {
			bad("egress", strconv.Quote(e), err.Error(), "use host, *.suffix, host:port, host:* or a CIDR range")
		}
	}
	for _, g := range c.EgressGroups {
		if err := checkGroupName(g); err != nil {
			bad("egress_groups", strconv.Quote(g), err.Error(), "use one of "+quoteList(egressGroupNames())+" (corral egress groups lists them)")
		}
	}
	if c.LearnFor != nil && (c.LearnFor.Duration < time.Minute || c.LearnFor.Duration > MaxLearnFor) {
		bad("learn_for", strconv.Quote(c.LearnFor.String()), "must be between 1m and "+MaxLearnFor.String(), `use a duration such as "30m" or "2h"`)
	}
	for _, why := range CheckHostPorts(c.HostPorts) {
		bad("host_ports", "", why, "name each port on its own, from 1024 to 65535, outside corral's broker ports")
	}
	for _, e := range c.PortEntries {
		if _, err := ParsePort(e); err != nil {
			bad("ports", strconv.Quote(e), err.Error(), `use "3000" or "8080:80"`)
		}
	}
	for i, m := range c.Mounts {
		key := fmt.Sprintf("mounts[%d]", i)
		if m.Location == "" {
			bad(key+".location", `""`, "missing", "")
		} else if !filepath.IsAbs(m.Location) && !strings.HasPrefix(m.Location, "~/") {
			bad(key+".location", strconv.Quote(m.Location), "must be absolute or start with ~/", "")
		}
		if m.MountPoint != "" && !filepath.IsAbs(m.MountPoint) {
			bad(key+".mount_point", strconv.Quote(m.MountPoint), "must be an absolute guest path", "")
		}
	}
	for _, n := range c.ForwardEnv {
		if !envNameRe().MatchString(n) {
			bad("forward_env", strconv.Quote(n), "not a variable name", "")
		}
	}
	for _, n := range SortedKeys(c.Env) {
		if !envNameRe().MatchString(n) {
			bad("env."+n, "", "not a variable name", "")
		}
	}
	for _, n := range SortedKeys(c.EnvFromHost) {
		if !envNameRe().MatchString(n) {
			bad("env_from_host."+n, "", "not a variable name", "")
		}
		if v := c.EnvFromHost[n]; !envNameRe().MatchString(v) {
			bad("env_from_host."+n, strconv.Quote(v), "value must name a host variable", "")
		}
	}
	for _, n := range SortedKeys(c.KeychainEnv) {
		if !envNameRe().MatchString(n) {
			bad("keychain_env."+n, "", "not a variable name", "")
		}
		ref := c.KeychainEnv[n]
		if ref.Service == "" || ref.Account == "" {
			bad("keychain_env."+n, "", "needs both service and account", `write NAME = { service = "…", account = "…" }`)
		}
	}
	for _, n := range SortedKeys(c.Credentials) {
		checkCredential(n, c.Credentials[n], bad)
	}
	for _, n := range SortedKeys(c.Agents) {
		key := "agents." + n
		if !agent.ValidName(n) {
			key = joinKey("agents", n)
		}
		d := c.Agents[n]
		for _, p := range agent.Check(n, d) {
			k := key
			if p.Key != "" {
				k += "." + p.Key
			}
			bad(k, p.Value, p.Reason, "")
		}
		for _, e := range d.Egress {
			if err := CheckEgressEntry(e); err != nil {
				bad(key+".egress", strconv.Quote(e), err.Error(), "use host, *.suffix, host:port, host:* or a CIDR range")
			}
		}
	}
	for _, h := range c.GitTokens {
		if !hostnameRe().MatchString(h) {
			bad("git_tokens", strconv.Quote(h), "not a host name", `use a host such as "github.com"`)
		}
	}
	return errs
}

// MaxProjectRoots caps project_roots: each root is read at every menu
// refresh of its scan.
const MaxProjectRoots = 16

// checkProjectRoots: absolute or ~/ paths, printable, at most
// MaxProjectRoots.
func checkProjectRoots(roots []string, bad func(k, v, r, f string)) {
	if len(roots) > MaxProjectRoots {
		bad("project_roots", fmt.Sprintf("(%d entries)", len(roots)), fmt.Sprintf("at most %d roots", MaxProjectRoots), "name the folders that hold your repositories, e.g. [\"~/src\"]")
	}
	for _, r := range roots {
		switch {
		case r == "" || len(r) > 4096 || strings.ContainsFunc(r, func(c rune) bool { return c < 0x20 || c == 0x7f }):
			bad("project_roots", strconv.Quote(r), "not a path", `use an absolute path or one starting with ~/, e.g. "~/src"`)
		case !filepath.IsAbs(r) && r != "~" && !strings.HasPrefix(r, "~/"):
			bad("project_roots", strconv.Quote(r), "must be absolute or start with ~/", `e.g. "~/src"`)
		}
	}
}

// ValidTerminal reports whether name may be the terminal key: an app name
// for `open -a` or a command name, never a path, an option or shell text.
func ValidTerminal(name string) bool { return terminalRe().MatchString(name) }

// CheckEgressEntry validates the syntax of an allow-list entry: host,
// *.suffix, host:port, host:* or a CIDR range (a config-only entry that
// allows private and IP-literal destinations in it). The grammar is
// egress.ParseAllowEntry's, the one every allow-list uses; what may be granted
// is CheckGrant's.
func CheckEgressEntry(e string) error {
	_, err := egress.ParseAllowEntry(e)
	return err
}

// egressGroupNames are the names egress_groups takes (core/egress keeps
// the groups).
func egressGroupNames() []string { return egress.GroupNames() }

// checkGroupName checks one egress_groups entry: a group name exactly.
func checkGroupName(g string) error {
	if !slices.Contains(egressGroupNames(), g) {
		return errors.New("unknown egress group")
	}
	return nil
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = strconv.Quote(x)
	}
	return strings.Join(q, ", ")
}

var credNameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`) })

// checkCredential is the early, file-naming check of a [credentials.NAME]
// table; core/egress (NewCredentialBroker) is the authority when the broker
// starts.
func checkCredential(n string, cr Credential, bad func(key, value, reason, fix string)) {
	key := "credentials." + n
	if !credNameRe().MatchString(n) {
		bad(key, "", "not a credential name", "use lowercase letters, digits, - and _ (it is a URL path segment)")
	}
	u, err := url.Parse(cr.Upstream)
	switch {
	case cr.Upstream == "":
		bad(key+".upstream", `""`, "missing", `write upstream = "https://host"`)
	case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "":
		bad(key+".upstream", strconv.Quote(cr.Upstream), "must be an https:// URL with a host and no userinfo, query or fragment", "")
	}
	if !slices.Contains(CredentialHeaders, cr.Header) {
		bad(key+".header", strconv.Quote(cr.Header), "unknown header", "use one of "+quoteList(CredentialHeaders))
	}
	switch {
	case cr.Keychain == nil && cr.EnvFromHost == "":
		bad(key, "", "no secret source", `add keychain = { service = "…", account = "…" } or env_from_host = "HOST_VAR"`)
	case cr.Keychain != nil && cr.EnvFromHost != "":
		bad(key, "", "both keychain and env_from_host", "keep one")
	case cr.Keychain != nil && (cr.Keychain.Service == "" || cr.Keychain.Account == ""):
		bad(key+".keychain", "", "needs both service and account", "")
	case cr.Keychain == nil && !envNameRe().MatchString(cr.EnvFromHost):
		bad(key+".env_from_host", strconv.Quote(cr.EnvFromHost), "must name a host variable", "")
	}
	if cr.CA != "" && !filepath.IsAbs(cr.CA) && !strings.HasPrefix(cr.CA, "~/") {
		bad(key+".ca", strconv.Quote(cr.CA), "must be absolute or start with ~/", "")
	}
	checkCredentialRules(key, cr, bad)
}

// checkAgent refuses an effective agent that is neither built in nor
// defined under [agents] in a trusted layer: the name is checked per
// layer, the definition may come from another layer.
func checkAgent(eff *Effective) []error {
	c := &eff.Config
	if c.Agent == nil {
		return nil
	}
	if _, err := agent.Find(c.Agents, *c.Agent); err != nil {
		return []error{&Violation{
			File: strings.Join(eff.Origin["agent"], ", "), Key: "agent", Value: strconv.Quote(*c.Agent),
			Reason: "unknown agent", Fix: "use one of " + quoteList(agent.Names(c.Agents)) + ", or define it under [agents." + *c.Agent + "] in a trusted layer",
		}}
	}
	return nil
}

// MaxProjectPaths caps the entries of hide and of box_dirs.
const MaxProjectPaths = 64

// CheckProjectPath is the grammar of a hide or box_dirs entry: a relative
// path inside the project, components of letters, digits and . _ - + @
// (none starting with -, none . or ..), one trailing / allowed, at most
// 255 bytes. The guest
// receives the list space-separated and mounts each entry as root
// (guest/apply-project.sh): a space, glob or shell character would split or
// change it, so none is allowed, in any layer.
func CheckProjectPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case len(p) > 255:
		return errors.New("longer than 255 bytes")
	case strings.HasPrefix(p, "/"):
		return errors.New("must be relative to the project")
	}
	for _, part := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		switch {
		case part == "":
			return errors.New("has an empty component (// or a trailing /)")
		case part == "." || part == "..":
			return errors.New("has a . or .. component")
		case part[0] == '-':
			return errors.New("has a component starting with -")
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-+@", r)) {
				return fmt.Errorf("has the character %q", r)
			}
		}
	}
	return nil
}

// checkUpstreamProxy: a URL egress reads (no credentials in it), a whole
// keychain reference, no_proxy entries egress reads.
func checkUpstreamProxy(u *UpstreamProxy, bad func(k, v, r, f string)) {
	if u == nil {
		return
	}
	if _, _, err := egress.ParseUpstreamProxy(u.URL); err != nil {
		bad("upstream_proxy.url", strconv.QuoteToASCII(u.URL), err.Error(), `use "http://HOST:PORT" or "socks5://HOST:PORT"; name the credentials with keychain = { service = "…", account = "USER" }`)
	}
	if k := u.Keychain; k != nil && (k.Service == "" || k.Account == "") {
		bad("upstream_proxy.keychain", "", "needs both service and account", `e.g. keychain = { service = "corp-proxy", account = "alice" }: account is the proxy user name, the item's secret its password`)
	}
	if _, err := egress.ParseNoProxy(u.NoProxy); err != nil {
		bad("upstream_proxy.no_proxy", "", err.Error(), `use host names, "*.suffix", addresses or CIDR ranges`)
	}
}
