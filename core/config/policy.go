package config

import (
	"encoding/json"
	"errors"
	"fmt"
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
	HostMemory  uint64
	HostCPUs    int
}

// MaxProjectDisk caps the disk a repository may ask for.
const MaxProjectDisk = 200 << 30

// checkProject applies the trust policy to the repository layer. base is
// the merge of the layers below it (defaults and global), which the
// repository may tighten but never loosen. It returns the problems and the
// keys it checked: every key the decoded layer sets (Layer.Set), each by
// its class.
func checkProject(l Layer, base Config, in PolicyInput) (errs []error, checked []string) {
	c := &l.Config
	bad := func(key, value, reason, fix string) {
		errs = append(errs, &Violation{File: l.Path, Line: l.line(key), Key: key, Value: value, Reason: reason, Fix: fix})
	}
	trustFix := func(lines string) string {
		return fmt.Sprintf("if you trust this repository, add to %s:\n%s", in.TrustedPath, lines)
	}
	for _, name := range l.Set {
		key, _ := KeyByName(name)
		checked = append(checked, name)
		switch key.Class {
		case ClassHost:
			lines := tomlLine(name, field(c, name).Interface())
			reason := "a repository may not set this (it widens host access)"
			switch name {
			case "credentials":
				reason = "a repository may request a credential but not configure one (it names host secrets)"
			case "agents":
				reason = "a repository may not define agents (an agent's install step runs as root when the golden image is built)"
			case "learn_for":
				reason = "a repository may not set this (how long a box may reach any public host is the user's choice)"
			case "hold_denied":
				reason = "a repository may not set this (holding denied connections keeps the box waiting on the user: the user's choice)"
			}
			bad(name, shortValue(field(c, name).Interface()), reason, trustFix(lines))
		case ClassTighten:
			checkTighten(name, c, &base, bad, trustFix)
		case ClassCapped:
			checkCap(name, c, in, bad, trustFix)
		case ClassAdd:
			if name == "hide" || name == "box_dirs" || name == "provision" {
				for _, p := range field(c, name).Interface().([]string) {
					if err := insideProject(in.ProjectDir, p); err != nil {
						bad(name, strconv.Quote(p), err.Error(), "use a relative path inside the project")
					}
				}
			}
		case ClassEnv:
			for _, n := range SortedKeys(c.Env) {
				if why := secretish(n, &base); why != "" {
					bad("env."+n, strconv.Quote(c.Env[n]), "a repository may not set "+why,
						trustFix(tomlLine("env", map[string]string{n: c.Env[n]})))
				}
			}
		}
	}
	return errs, checked
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

func checkTighten(name string, c, base *Config, bad func(k, v, r, f string), trustFix func(string) string) {
	if name == "readonly_project" {
		if !*c.ReadonlyProject && base.ReadonlyProject != nil && *base.ReadonlyProject {
			bad(name, "false", "a repository may make the project read-only, not writable", trustFix("readonly_project = false"))
		}
		return
	}
	if name == "git_shadow" {
		if !*c.GitShadow {
			bad(name, "false", "a repository may turn the git shadow on, not off (the box could then plant commands for the host's git)", trustFix("git_shadow = false"))
		}
		return
	}
	order := map[string][]string{"network": NetworkOrder, "agent_state": AgentStateOrder, "profile": ProfileOrder, "source": SourceOrder,
		"agent_credentials": AgentCredentialsOrder}[name]
	// Every ordered key is a pointer to a named string type.
	vp, bp := field(c, name), field(base, name)
	if bp.IsNil() {
		return
	}
	v, b := vp.Elem().String(), bp.Elem().String()
	if vi, bi := slices.Index(order, v), slices.Index(order, b); vi >= 0 && vi < bi {
		bad(name, strconv.Quote(v), fmt.Sprintf("a repository may only tighten %s (%s), and this loosens %q", name, strings.Join(order, " < "), b),
			trustFix(fmt.Sprintf("%s = %q", name, v)))
	}
}

func checkCap(name string, c *Config, in PolicyInput, bad func(k, v, r, f string), trustFix func(string) string) {
	switch name {
	case "cpus":
		if in.HostCPUs > 0 && *c.CPUs > in.HostCPUs {
			bad(name, strconv.Itoa(*c.CPUs), fmt.Sprintf("a repository may ask for at most the host's %d CPUs", in.HostCPUs),
				trustFix(fmt.Sprintf("cpus = %d", *c.CPUs)))
		}
	case "memory":
		n, err := ParseSize(*c.Memory)
		if err == nil && in.HostMemory > 0 && n > in.HostMemory/2 {
			bad(name, strconv.Quote(*c.Memory), fmt.Sprintf("a repository may ask for at most half the host's RAM (%s)", FormatSize(in.HostMemory/2)),
				trustFix(fmt.Sprintf("memory = %q", *c.Memory)))
		}
	case "disk":
		n, err := ParseSize(*c.Disk)
		if err == nil && n > MaxProjectDisk {
			bad(name, strconv.Quote(*c.Disk), "a repository may ask for at most 200GiB", trustFix(fmt.Sprintf("disk = %q", *c.Disk)))
		}
	}
}

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

// checkFloors applies profile floors to the effective config.
func checkFloors(eff *Effective) []error {
	c := &eff.Config
	var errs []error
	if val(c.Profile) == ProfileStrict {
		if c.Network != nil && looserThanBroker(*c.Network) {
			c.Network = ptr(NetworkBroker)
			eff.Origin["network"] = append(eff.Origin["network"], "profile strict (floor: broker)")
		}
		if c.Sudo != nil && *c.Sudo {
			errs = append(errs, &Violation{
				File: strings.Join(eff.Origin["sudo"], ", "), Key: "sudo", Value: "true",
				Reason: "the strict profile means no sudo in the box",
				Fix:    `remove sudo = true, or use profile = "default"`,
			})
		}
		if c.GitShadow != nil && !*c.GitShadow {
			errs = append(errs, &Violation{
				File: strings.Join(eff.Origin["git_shadow"], ", "), Key: "git_shadow", Value: "false",
				Reason: "the strict profile refuses the git shadow opt-out: the box could write what the host's git executes",
				Fix:    `remove git_shadow = false, or use profile = "default"`,
			})
		}
		if val(c.AgentState) == agentstate.Shared {
			errs = append(errs, &Violation{
				File: strings.Join(eff.Origin["agent_state"], ", "), Key: "agent_state", Value: `"shared"`,
				Reason: "the strict profile refuses shared agent state: one box could plant hooks another box runs",
				Fix:    `use agent_state = "seeded" (the default), or profile = "default"`,
			})
		}
		if val(c.MountType) == MountReverseSSHFS {
			errs = append(errs, &Violation{
				File: strings.Join(eff.Origin["mount_type"], ", "), Key: "mount_type", Value: `"reverse-sshfs"`,
				Reason: "the strict profile refuses reverse-sshfs: guest root can drive the host's sftp-server outside the project",
				Fix:    `use mount_type = "9p" (Linux) or "virtiofs" (macOS), or profile = "default"`,
			})
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
