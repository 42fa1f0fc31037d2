package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/agentstate"
)

// PolicyInput is what the repository policy needs besides the layers.
type PolicyInput struct {
	ProjectDir  string // absolute, symlink-free
	TrustedPath string // where the user may put what a repository may not
	// Trusted is the trusted layer as loaded (nil: none, or it did not
	// load): a fix replaces what it already sets for a key instead of
	// adding a second statement.
	Trusted    *Layer
	HostMemory uint64
	HostCPUs   int
}

// MaxProjectDisk caps the disk a repository may ask for.
const MaxProjectDisk = 200 << 30

// TrustVerdict is the trust check's answer for one key (or one env
// variable) a repository layer sets.
type TrustVerdict struct {
	// Allowed: the repository's value widens nothing the user's own
	// layers do not already allow.
	Allowed bool
	Reason  string
	// Lines is the TOML that makes the user's trusted layer allow it: the
	// key's whole new value there (its own entries, then the
	// repository's), to add, or to put in place of the key's statement or
	// table when the trusted layer sets it already. "" when no layer of the
	// user's can grant it (Never).
	Lines string
	// Never: the value is refused whatever the user's layers say (a path
	// that leaves the project, a value the strict profile refuses); Fix
	// says what to do instead.
	Never bool
	Fix   string
}

// judgeRepoKey is the trust check of one key the repository layer repo
// sets, against user: the merge of the user's own layers (defaults,
// global and trusted), everything the user allows. It is the one place
// that decides both whether the key is refused and which lines to copy
// into the trusted layer, so that copying them makes the check pass
// (TestTrustFixMakesTheCheckPass holds the two together). A replaced key
// the trusted layer sets is shadowed (its value is in force whatever the
// repository says); under the strict profile (strict: in force once the
// fixes are followed) a value the strict floor refuses is never granted.
// env is judged per variable (judgeEnv); repository-may-add keys are
// checked by insideProject.
func judgeRepoKey(name string, repo, user *Config, in PolicyInput, strict bool) TrustVerdict {
	key, _ := KeyByName(name)
	v := field(repo, name).Interface()
	ok := TrustVerdict{Allowed: true}
	if name == "upstream_proxy" {
		// Not even the value the user's layers give: the proxy is where
		// the box's allowed traffic goes, and a repository has no say in it.
		return TrustVerdict{Reason: "a repository may never set the upstream proxy (where the broker sends the box's traffic)",
			Never: true, Fix: "remove it from the repository's .corral.toml; set upstream_proxy in ~/.corral/config.toml or ~/.corral/projects/<box>.toml"}
	}
	if key.Merge == MergeReplace && trustedSets(in, name) {
		return ok
	}
	if why, fix := strictRefuses(name, repo); strict && why != "" {
		// No trusted line grants it, even one that says the same
		// (checkFloors leaves a value only the repository set to this
		// report).
		return TrustVerdict{Reason: why, Never: true, Fix: fix}
	}
	switch key.Class {
	case ClassHost:
		var t reflect.Value
		if in.Trusted != nil {
			t = field(&in.Trusted.Config, name)
		}
		if covers(key, field(user, name), field(repo, name), t) {
			return ok
		}
		return TrustVerdict{Reason: hostOnlyReason(name), Lines: tomlLine(name, trustedValue(key, in.Trusted, field(repo, name)).Interface())}
	case ClassTighten:
		if why := loosens(name, repo, user); why != "" {
			return TrustVerdict{Reason: why, Lines: tomlLine(name, v)}
		}
		return ok
	case ClassCapped:
		if why := overCap(name, repo, user, in); why != "" {
			return TrustVerdict{Reason: why, Lines: tomlLine(name, v)}
		}
		return ok
	}
	return ok
}

// hostOnlyReason says why a repository may not set host-only key name.
func hostOnlyReason(name string) string {
	switch name {
	case "credentials":
		return "a repository may request a credential but not configure one (it names host secrets)"
	case "agents":
		return "a repository may not define agents (an agent's install step runs as root when the golden image is built)"
	case "learn_for":
		return "a repository may not set this (how long a box may reach any public host is the user's choice)"
	case "hold_denied":
		return "a repository may not set this (holding denied connections keeps the box waiting on the user: the user's choice)"
	}
	return "a repository may not set this (it widens host access)"
}

// covers reports whether the user's value u of key already holds the
// repository's value r, so that r changes nothing the merge would not
// give without it: the same value (replace), every entry (union), every
// entry with the same value or one the trusted layer's value t sets, and
// so shadows (per-key tables).
func covers(key Key, u, r, t reflect.Value) bool {
	if r.Kind() == reflect.Pointer || r.Kind() == reflect.Map || r.Kind() == reflect.Slice {
		if r.IsNil() {
			return true
		}
	}
	switch key.Merge {
	case MergeUnion:
		for i := range r.Len() {
			if !sliceHas(u, r.Index(i)) {
				return false
			}
		}
		return true
	case MergeKeys:
		if u.IsNil() {
			return r.Len() == 0
		}
		for _, k := range r.MapKeys() {
			if t.IsValid() && !t.IsNil() && t.MapIndex(k).IsValid() {
				continue // shadowed
			}
			uv := u.MapIndex(k)
			if !uv.IsValid() || !reflect.DeepEqual(uv.Interface(), r.MapIndex(k).Interface()) {
				return false
			}
		}
		return true
	}
	if u.Kind() == reflect.Pointer && u.IsNil() {
		return false
	}
	return reflect.DeepEqual(u.Interface(), r.Interface())
}

func sliceHas(s, e reflect.Value) bool {
	if !s.IsValid() || s.IsNil() {
		return false
	}
	for i := range s.Len() {
		if reflect.DeepEqual(s.Index(i).Interface(), e.Interface()) {
			return true
		}
	}
	return false
}

// trustedValue is the value key should hold in the trusted layer t for it
// to allow the repository's value r: r itself for a replaced key; t's own
// entries and then r's for a list or a table.
func trustedValue(key Key, t *Layer, r reflect.Value) reflect.Value {
	if t == nil || key.Merge == MergeReplace || !isSet(&t.Config, key.Name) {
		return r
	}
	tv := field(&t.Config, key.Name)
	if key.Merge == MergeUnion {
		return union(tv, r)
	}
	m := reflect.MakeMap(tv.Type())
	for _, src := range []reflect.Value{tv, r} {
		for _, k := range src.MapKeys() {
			m.SetMapIndex(k, src.MapIndex(k))
		}
	}
	return m
}

// trustFix is the text of a fix whose lines go in the trusted layer: to
// add, or to replace what the layer sets for key already. A key = value
// line added below a [table] would belong to the table, so the text says
// where it goes when the layer has one.
func trustFix(in PolicyInput, key, lines string) string {
	if in.Trusted != nil && isSet(&in.Trusted.Config, key) {
		what := key
		if strings.HasPrefix(lines, "[") {
			what = "its [" + key + "] table"
		}
		return fmt.Sprintf("if you trust this repository, replace %s in %s with:\n%s", what, in.TrustedPath, lines)
	}
	if !strings.HasPrefix(lines, "[") && in.Trusted != nil && hasTables(&in.Trusted.Config) {
		return fmt.Sprintf("if you trust this repository, add to %s, above its first [table]:\n%s", in.TrustedPath, lines)
	}
	return fmt.Sprintf("if you trust this repository, add to %s:\n%s", in.TrustedPath, lines)
}

// hasTables reports whether c sets a key written as a TOML table.
func hasTables(c *Config) bool {
	for _, name := range setKeys(c) {
		if strings.HasPrefix(tomlLine(name, field(c, name).Interface()), "[") {
			return true
		}
	}
	return false
}

// checkProject applies the trust policy to the repository layer. user is
// the merge of the user's own layers (defaults, global and trusted): a
// repository may tighten it, never widen it, and what the user's layers
// already allow the repository may say again. It returns the problems and
// the keys it checked: every key the decoded layer sets (Layer.Set), each
// by its class.
func checkProject(l Layer, user Config, in PolicyInput) (errs []error, checked []string) {
	c := &l.Config
	// The profile in force once the printed fixes are followed: the
	// repository's when it sets one (a tightening passes, a loosening is
	// granted by its fix), else the user's.
	strict := val(user.Profile) == ProfileStrict
	if c.Profile != nil && !trustedSets(in, "profile") {
		strict = *c.Profile == ProfileStrict
	}
	report := func(key, value string, v TrustVerdict) {
		fix := v.Fix
		if v.Lines != "" {
			fix = trustFix(in, strings.SplitN(key, ".", 2)[0], v.Lines)
		}
		errs = append(errs, &Violation{File: l.Path, Line: l.line(key), Key: key, Value: value, Reason: v.Reason, Fix: fix, Lines: v.Lines, Never: v.Never})
	}
	for _, name := range l.Set {
		key, _ := KeyByName(name)
		checked = append(checked, name)
		switch key.Class {
		case ClassHost, ClassTighten, ClassCapped:
			if v := judgeRepoKey(name, c, &user, in, strict); !v.Allowed {
				report(name, trustValue(name, c), v)
			}
		case ClassAdd:
			if name == "hide" || name == "box_dirs" || name == "provision" {
				for _, p := range field(c, name).Interface().([]string) {
					if err := insideProject(in.ProjectDir, p); err != nil {
						report(name, strconv.Quote(p), TrustVerdict{Reason: err.Error(), Never: true, Fix: "use a relative path inside the project"})
					}
				}
			}
		case ClassEnv:
			for _, j := range judgeEnv(c, &user, in) {
				report("env."+j.name, strconv.Quote(c.Env[j.name]), j.TrustVerdict)
			}
		}
	}
	return errs, checked
}

// trustedSets reports whether the trusted layer sets key.
func trustedSets(in PolicyInput, key string) bool {
	return in.Trusted != nil && isSet(&in.Trusted.Config, key)
}

// trustValue is a repository's value of key for a problem line.
func trustValue(name string, c *Config) string {
	switch name {
	case "network", "agent_state", "profile", "source", "agent_credentials":
		return strconv.Quote(field(c, name).Elem().String())
	case "cpus":
		return strconv.Itoa(*c.CPUs)
	case "memory", "disk":
		return strconv.Quote(field(c, name).Elem().String())
	}
	return shortValue(field(c, name).Interface())
}

type envVerdict struct {
	name string
	TrustVerdict
}

// judgeEnv judges each variable of a repository's env against the
// user's. A variable the user's layers set to the same value is allowed;
// any other that names a secret, a proxy or a forwarded variable is
// refused, and every refused variable shares one fix: the trusted layer's
// env with all of them added, so that following any one of the fixes, or
// all, gives the same file.
func judgeEnv(c, user *Config, in PolicyInput) []envVerdict {
	var out []envVerdict
	add := map[string]string{}
	// What the host forwards or provides once the printed fixes are
	// followed: the user's and the repository's (granted by its fix).
	after := Config{ForwardEnv: slices.Concat(user.ForwardEnv, c.ForwardEnv), EnvFromHost: map[string]string{}, KeychainEnv: map[string]SecretRef{}}
	for _, m := range []map[string]string{user.EnvFromHost, c.EnvFromHost} {
		maps.Copy(after.EnvFromHost, m)
	}
	for _, m := range []map[string]SecretRef{user.KeychainEnv, c.KeychainEnv} {
		maps.Copy(after.KeychainEnv, m)
	}
	for _, n := range SortedKeys(c.Env) {
		if u, ok := user.Env[n]; ok && u == c.Env[n] {
			continue
		}
		if in.Trusted != nil {
			if _, shadowed := in.Trusted.Config.Env[n]; shadowed {
				continue // the trusted layer's value is in force
			}
		}
		if why := secretish(n, &after); why != "" {
			out = append(out, envVerdict{n, TrustVerdict{Reason: "a repository may not set " + why}})
			add[n] = c.Env[n]
		}
	}
	if len(out) == 0 {
		return nil
	}
	key, _ := KeyByName("env")
	lines := tomlLine("env", trustedValue(key, in.Trusted, reflect.ValueOf(add)).Interface())
	for i := range out {
		out[i].Lines = lines
	}
	return out
}

// unchecked refuses every key whose merged value the repository layer
// changed (merged differs from below) but the policy did not check. By
// construction the list is empty (Merge applies only what Layer.Set names,
// and checkProject checks all of it); this keeps it so if either changes.
func unchecked(l Layer, below, merged Config, checked []string) []error {
	var errs []error
	for _, name := range changedKeys(&below, &merged) {
		if !slices.Contains(checked, name) {
			errs = append(errs, &Violation{File: l.Path, Key: name,
				Reason: "changed by the repository but not checked by the trust policy (a bug in corral; please report it)"})
		}
	}
	return errs
}

// changedKeys lists the schema keys whose values differ between a and b.
func changedKeys(a, b *Config) []string {
	var out []string
	for _, key := range Schema {
		if !reflect.DeepEqual(field(a, key.Name).Interface(), field(b, key.Name).Interface()) {
			out = append(out, key.Name)
		}
	}
	return out
}

// loosens says why the repository's value of an ordered key (or of
// readonly_project, git_shadow) is looser than the user's, or "".
func loosens(name string, c, user *Config) string {
	switch name {
	case "readonly_project":
		if !*c.ReadonlyProject && user.ReadonlyProject != nil && *user.ReadonlyProject {
			return "a repository may make the project read-only, not writable"
		}
		return ""
	case "git_shadow":
		if !*c.GitShadow && (user.GitShadow == nil || *user.GitShadow) {
			return "a repository may turn the git shadow on, not off (the box could then plant commands for the host's git)"
		}
		return ""
	}
	order := map[string][]string{"network": NetworkOrder, "agent_state": AgentStateOrder, "profile": ProfileOrder, "source": SourceOrder,
		"agent_credentials": AgentCredentialsOrder}[name]
	// Every ordered key is a pointer to a named string type.
	vp, up := field(c, name), field(user, name)
	if up.IsNil() {
		return ""
	}
	v, u := vp.Elem().String(), up.Elem().String()
	if vi, ui := slices.Index(order, v), slices.Index(order, u); vi >= 0 && vi < ui {
		return fmt.Sprintf("a repository may only tighten %s (%s), and this loosens %q", name, strings.Join(order, " < "), u)
	}
	return ""
}

// overCap says why the repository's value of a capped key is more than
// both the host's cap and what the user's layers set, or "".
func overCap(name string, c, user *Config, in PolicyInput) string {
	switch name {
	case "cpus":
		if in.HostCPUs > 0 && *c.CPUs > in.HostCPUs && (user.CPUs == nil || *c.CPUs > *user.CPUs) {
			return fmt.Sprintf("a repository may ask for at most the host's %d CPUs", in.HostCPUs)
		}
	case "memory":
		if n, err := ParseSize(*c.Memory); err == nil && in.HostMemory > 0 && n > in.HostMemory/2 && !sizeAtMost(n, user.Memory) {
			return fmt.Sprintf("a repository may ask for at most half the host's RAM (%s)", FormatSize(in.HostMemory/2))
		}
	case "disk":
		if n, err := ParseSize(*c.Disk); err == nil && n > MaxProjectDisk && !sizeAtMost(n, user.Disk) {
			return "a repository may ask for at most 200GiB"
		}
	}
	return ""
}

// sizeAtMost reports whether n is at most the size s (nil or invalid: no).
func sizeAtMost(n uint64, s *string) bool {
	if s == nil {
		return false
	}
	m, err := ParseSize(*s)
	return err == nil && n <= m
}

// strictRefuses says why the strict profile refuses c's value of key name,
// and what to do instead ("" when it does not). It is the strict floor's
// one list: checkFloors applies it to the effective config, and the trust
// check to a repository's value, which no trusted line can then grant.
func strictRefuses(name string, c *Config) (why, fix string) {
	switch name {
	case "sudo":
		if c.Sudo != nil && *c.Sudo {
			return "the strict profile means no sudo in the box", `remove sudo = true, or use profile = "default"`
		}
	case "git_shadow":
		if c.GitShadow != nil && !*c.GitShadow {
			return "the strict profile refuses the git shadow opt-out: the box could write what the host's git executes",
				`remove git_shadow = false, or use profile = "default"`
		}
	case "agent_state":
		if val(c.AgentState) == agentstate.Shared {
			return "the strict profile refuses shared agent state: one box could plant hooks another box runs",
				`use agent_state = "seeded" (the default), or profile = "default"`
		}
	case "mount_type":
		if val(c.MountType) == MountReverseSSHFS {
			return "the strict profile refuses reverse-sshfs: guest root can drive the host's sftp-server outside the project",
				`use mount_type = "9p" (Linux) or "virtiofs" (macOS), or profile = "default"`
		}
	}
	return "", ""
}

// strictKeys are the keys strictRefuses judges, in report order.
var strictKeys = []string{"sudo", "git_shadow", "agent_state", "mount_type"}

// insideProject resolves rel against the project, following .. and every
// symlink that exists, and fails when the result leaves the project.
func insideProject(projectDir, rel string) error {
	if rel == "" {
		return errors.New("empty path")
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "~") {
		return errors.New("must be relative to the project")
	}
	p := filepath.Join(projectDir, rel)
	if !within(projectDir, p) {
		return errors.New("leaves the project")
	}
	// Resolve the longest existing prefix: a symlink inside the project may
	// point anywhere on the host.
	existing, rest := p, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("cannot resolve: %w", err)
	}
	if !within(projectDir, filepath.Join(real, rest)) {
		return errors.New("leaves the project through a symlink")
	}
	return nil
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// secretNames are substrings that mark a variable as carrying a secret.
var secretNames = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "API_KEY", "APIKEY", "PRIVATE_KEY", "ACCESS_KEY", "AUTH", "COOKIE", "SESSION"}

// reservedPrefixes are variables that steer agents, git or corral itself;
// a repository setting them could redirect a forwarded token.
var reservedPrefixes = []string{"ANTHROPIC_", "CLAUDE_", "CORRAL_", "OPENAI_", "GH_", "GITHUB_", "GITLAB_", "GLAB_", "GIT_", "AWS_", "SSH_", "GPG_"}

var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "FTP_PROXY", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}

// secretish says why a repository may not set variable n, or "".
func secretish(n string, base *Config) string {
	u := strings.ToUpper(n)
	if slices.Contains(proxyVars, u) {
		return "proxy or certificate settings"
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(u, p) {
			return "variables starting with " + p + " (they steer agents, git or corral)"
		}
	}
	for _, s := range secretNames {
		if strings.Contains(u, s) {
			return "variables whose names mark secrets (" + s + ")"
		}
	}
	if slices.Contains(base.ForwardEnv, n) {
		return "a variable the host forwards"
	}
	if _, ok := base.EnvFromHost[n]; ok {
		return "a variable the host provides"
	}
	if _, ok := base.KeychainEnv[n]; ok {
		return "a variable read from the keychain"
	}
	return ""
}

// checkFloors applies profile floors to the effective config. A value
// that only the repository file repoFile set is the trust check's to
// report (checkProject): it knows whether the strict profile stays in
// force once its fixes are followed.
func checkFloors(eff *Effective, repoFile string) []error {
	c := &eff.Config
	var errs []error
	if val(c.Profile) == ProfileStrict {
		if c.Network != nil && looserThanBroker(*c.Network) {
			c.Network = ptr(NetworkBroker)
			eff.Origin["network"] = append(eff.Origin["network"], "profile strict (floor: broker)")
		}
		for _, name := range strictKeys {
			if why, fix := strictRefuses(name, c); why != "" && !slices.Equal(eff.Origin[name], []string{repoFile}) {
				errs = append(errs, &Violation{File: strings.Join(eff.Origin[name], ", "), Key: name,
					Value: trustValue(name, c), Reason: why, Fix: fix, Never: true})
			}
		}
	}
	return errs
}

// FormatSize prints bytes in binary units, e.g. "4GiB" or "1.5GiB".
func FormatSize(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	s := strconv.FormatFloat(f, 'f', 1, 64)
	s = strings.TrimSuffix(s, ".0")
	return s + units[i]
}

func shortValue(v any) string {
	s := strings.TrimSpace(tomlValue(v))
	if rv := reflect.ValueOf(deref(v)); rv.Kind() == reflect.Map || (rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() == reflect.Struct) {
		if b, err := json.Marshal(deref(v)); err == nil {
			s = string(b)
		}
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
