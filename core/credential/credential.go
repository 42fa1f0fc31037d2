// Package credential decides which secrets a box's broker holds instead of
// the box, and what a session gets in their place. It is the one rule both
// ends use: the broker (core/broker) builds its credential routes from
// Plan, and the session (core/launchenv) withholds the same secrets and
// sets the base URLs and placeholders from the same Plan.
//
// A brokered credential is either configured ([credentials.NAME], trusted
// layers only) or implicit: for the claude agent in broker mode with
// agent_credentials = "brokered" (the default), an Anthropic API key or
// OAuth token that the config or the host environment would otherwise put
// in the session becomes [credentials.anthropic].
package credential

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/secret"

	"github.com/corral-dev/corral/core/untrusted"
)

// Anthropic is the credential the claude agent uses.
const Anthropic = "anthropic"

// AnthropicUpstream is the Anthropic API an implicit credential forwards to.
const AnthropicUpstream = "https://api.anthropic.com"

// Placeholder is what a session gets where a secret would be: Claude Code
// needs some key to start, and the broker replaces it on every request.
const Placeholder = "corral-brokered-placeholder"

// Claude's variables (the key, the OAuth token, the API base URL).
const (
	APIKeyVar     = "ANTHROPIC_API_KEY"
	OAuthTokenVar = "CLAUDE_CODE_OAUTH_TOKEN"
	BaseURLVar    = "ANTHROPIC_BASE_URL"
)

// Spec is one credential the broker holds.
type Spec struct {
	Name     string
	Upstream string
	Header   egress.CredentialHeader
	// Exactly one source: Keychain, or EnvFromHost (a host variable, read
	// in the broker's environment, which is that of the corral command
	// that started it).
	Keychain    *config.SecretRef
	EnvFromHost string
	CA          string // PEM file of extra roots for this upstream; "" = system roots
	// Implicit is set for the claude agent's own key (not configured as a
	// [credentials] table).
	Implicit bool
	// Withholds are session variables this credential replaces: never put
	// in the session's environment.
	Withholds []string
}

// Plan lists the credentials a box's broker holds, by name. getenv reads
// the host environment (presence decides the implicit claude credential).
// The plan does not depend on the session's agent: a box's broker serves
// every session, and a key the broker holds is withheld from all of them.
// Outside broker mode there is no broker: Plan returns nothing, and
// configured credentials are a session error (see Check).
func Plan(c config.Config, getenv func(string) (string, bool)) []Spec {
	if c.NetworkMode() != config.NetworkBroker {
		return nil
	}
	var out []Spec
	for _, n := range config.SortedKeys(c.Credentials) {
		cr := c.Credentials[n]
		s := Spec{Name: n, Upstream: cr.Upstream, Header: egress.CredentialHeader(cr.Header), Keychain: cr.Keychain,
			EnvFromHost: cr.EnvFromHost, CA: cr.CA}
		if n == Anthropic {
			s.Withholds = []string{APIKeyVar, OAuthTokenVar}
		}
		out = append(out, s)
	}
	if deref(c.AgentCreds) != "forwarded" {
		if _, configured := c.Credentials[Anthropic]; !configured {
			if s, ok := implicitClaude(c, getenv); ok {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// implicitClaude turns the claude agent's configured key into a brokered
// credential: the API key first (Claude Code's own precedence), then the
// OAuth token; each from keychain_env, env_from_host or the host
// environment, in launchenv's stage order.
func implicitClaude(c config.Config, getenv func(string) (string, bool)) (Spec, bool) {
	for _, v := range []struct {
		name   string
		header egress.CredentialHeader
	}{{APIKeyVar, egress.HeaderAPIKey}, {OAuthTokenVar, egress.HeaderAuthorization}} {
		s := Spec{Name: Anthropic, Upstream: AnthropicUpstream, Header: v.header, Implicit: true,
			Withholds: []string{APIKeyVar, OAuthTokenVar}}
		if hv, ok := c.EnvFromHost[v.name]; ok {
			s.EnvFromHost = hv
			return s, true
		}
		if ref, ok := c.KeychainEnv[v.name]; ok {
			if val, set := lookup(getenv, v.name); set && val != "" {
				s.EnvFromHost = v.name // keychain_env uses an exported variable first
			} else {
				r := ref
				s.Keychain = &r
			}
			return s, true
		}
		if val, set := lookup(getenv, v.name); set && val != "" {
			s.EnvFromHost = v.name
			return s, true
		}
	}
	return Spec{}, false
}

func lookup(getenv func(string) (string, bool), n string) (string, bool) {
	if getenv == nil {
		return "", false
	}
	return getenv(n)
}

// Check reports configured credentials that cannot be brokered: the box
// has no broker outside broker mode.
func Check(c config.Config) error {
	if len(c.Credentials) > 0 && c.NetworkMode() != config.NetworkBroker {
		return fmt.Errorf("credentials need network = \"broker\" (this box is %q): only the broker can hold them", c.NetworkMode())
	}
	return nil
}

// Withheld lists the session variables the plan keeps out of the session.
func Withheld(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		for _, w := range s.Withholds {
			if !slices.Contains(out, w) {
				out = append(out, w)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Var is a session variable the plan sets; none holds a secret.
type Var struct{ Name, Value string }

// BaseURL is where the box reaches credential name through its broker,
// broker being "http://HOST:PORT" as the guest sees the broker.
func BaseURL(broker, name string) string {
	return strings.TrimRight(broker, "/") + egress.CredentialPrefix + name
}

// SessionVars are the variables a session gets for the plan: for the
// anthropic credential the base URL and a placeholder key or token (in
// every session, not only `corral claude`: the broker holds the key for
// the box, so `claude` started from `corral shell` works the same way);
// for every other credential, git's url.<base>.insteadOf for the upstream
// (as GIT_CONFIG_* variables), so that git's https URLs go to the broker.
func SessionVars(specs []Spec, broker string) []Var {
	var out []Var
	git := 0
	for _, s := range specs {
		base := BaseURL(broker, s.Name)
		if s.Name == Anthropic {
			out = append(out, Var{BaseURLVar, base})
			if s.Header == egress.HeaderAuthorization {
				out = append(out, Var{OAuthTokenVar, Placeholder})
			} else {
				out = append(out, Var{APIKeyVar, Placeholder})
			}
			continue
		}
		up := strings.TrimRight(s.Upstream, "/") + "/"
		out = append(out,
			Var{fmt.Sprintf("GIT_CONFIG_KEY_%d", git), "url." + base + "/.insteadOf"},
			Var{fmt.Sprintf("GIT_CONFIG_VALUE_%d", git), up})
		git++
	}
	if git > 0 {
		out = append(out, Var{"GIT_CONFIG_COUNT", fmt.Sprint(git)})
	}
	return out
}

// Broker turns the plan into the broker's credentials: secrets are read per
// request (keychain items cached for a minute, so a rotated key is picked
// up), host variables once, from getenv.
func Broker(specs []Spec, store secret.Store, getenv func(string) (string, bool)) ([]egress.Credential, error) {
	var out []egress.Credential
	var errs []error
	for _, s := range specs {
		c := egress.Credential{Name: s.Name, Upstream: s.Upstream, Header: s.Header}
		switch {
		case s.Keychain != nil:
			c.Secret = keychainSecret(store, *s.Keychain)
		case s.EnvFromHost != "":
			val, ok := lookup(getenv, s.EnvFromHost)
			name, hv := s.Name, s.EnvFromHost
			c.Secret = func(context.Context) (string, error) {
				if !ok || val == "" {
					return "", fmt.Errorf("credential %s: host variable %s was not set when the broker started", name, hv)
				}
				return val, nil
			}
		}
		if s.CA != "" {
			pool, err := loadCA(s.CA)
			if err != nil {
				errs = append(errs, fmt.Errorf("credential %s: %w", s.Name, err))
				continue
			}
			c.RootCAs = pool
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

func keychainSecret(store secret.Store, ref config.SecretRef) egress.SecretFunc {
	var mu sync.Mutex
	var val string
	var at time.Time
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if val != "" && time.Since(at) < time.Minute {
			return val, nil
		}
		if store == nil {
			return "", fmt.Errorf("no keychain for service %q account %q", ref.Service, ref.Account)
		}
		v, err := store.Get(ctx, ref.Service, ref.Account)
		if err != nil {
			return "", err
		}
		val, at = v, time.Now()
		return v, nil
	}
}

// maxCAFile caps a CA file: a bundle of a few hundred certificates.
const maxCAFile = 4 << 20

// loadCA reads a PEM file of extra roots. The pool holds the system roots
// too, so a private CA adds trust and never turns verification off. The
// path comes from the trusted config, but a FIFO or a device there must
// not hang the broker: it is read as a regular file, capped.
func loadCA(path string) (*x509.CertPool, error) {
	if strings.HasPrefix(path, "~/") {
		home, _ := os.UserHomeDir()
		path = filepath.Join(home, path[2:])
	}
	b, err := untrusted.ReadFile(path, maxCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading CA file: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
