// Package credential decides which secrets a box's broker holds instead of
// the box, and tells a session what to use in their place. The broker
// (core/broker) is the single owner of the plan: it calls Plan once when
// it starts, serves the routes (core/egress), and answers its box's
// sessions over its private Unix socket (Ask/ServeControl) with the routes
// it serves, a route token for that session, and the host variables it
// still wants. A session never plans: it withholds what the broker says it
// holds, sets the base URLs and placeholders of the routes the broker
// serves, and hands the broker, over that socket, a wanted key that only
// the session's environment has (the broker may have been started by the
// menu-bar app, which has no shell environment).
//
// A brokered credential is either configured ([credentials.NAME], trusted
// layers only) or an agent's own key: for the box's agent (config key
// agent) in broker mode with agent_credentials = "brokered" (the default),
// the key the config or the host environment would otherwise put in the
// session (AgentKeys) becomes the credential of that agent's API.
package credential

import (
	"context"
	"crypto/x509"
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

// Placeholder is what a session gets where a secret would be: an agent
// needs some key to start, and the broker replaces it on every request.
const Placeholder = "corral-brokered-placeholder"

// KeyVar is one variable an agent reads its key from, and how the key is
// sent upstream.
type KeyVar struct {
	Var    string
	Header egress.CredentialHeader
}

// AgentKey is how an agent's own key is brokered: the credential's name
// and upstream, the variable the agent reads its API's base URL from, and
// the variables its key may be in, in the agent's own precedence.
type AgentKey struct {
	Agent      string
	Name       string
	Upstream   string
	BaseURLVar string
	Keys       []KeyVar
}

// Credential names of the agents' keys.
const (
	Anthropic = "anthropic"
	OpenAI    = "openai"
	Gemini    = "gemini"
)

// AgentKeys are the built-in agents' keys. The base URL variables are the
// agents' documented ones: Claude Code's ANTHROPIC_BASE_URL; Codex's
// OPENAI_BASE_URL, which its built-in "openai" provider reads as the base
// of the Responses API (so the upstream holds /v1); Gemini CLI's
// GOOGLE_GEMINI_BASE_URL, used for its gemini-api-key auth (it reads the
// key from GEMINI_API_KEY and sends it as x-goog-api-key; GOOGLE_API_KEY
// holds the same kind of key and is withheld too).
var AgentKeys = []AgentKey{
	{Agent: "claude", Name: Anthropic, Upstream: "https://api.anthropic.com", BaseURLVar: "ANTHROPIC_BASE_URL",
		Keys: []KeyVar{{"ANTHROPIC_API_KEY", egress.HeaderAPIKey}, {"CLAUDE_CODE_OAUTH_TOKEN", egress.HeaderAuthorization}}},
	{Agent: "codex", Name: OpenAI, Upstream: "https://api.openai.com/v1", BaseURLVar: "OPENAI_BASE_URL",
		Keys: []KeyVar{{"OPENAI_API_KEY", egress.HeaderAuthorization}}},
	{Agent: "gemini", Name: Gemini, Upstream: "https://generativelanguage.googleapis.com", BaseURLVar: "GOOGLE_GEMINI_BASE_URL",
		Keys: []KeyVar{{"GEMINI_API_KEY", egress.HeaderGoogAPIKey}, {"GOOGLE_API_KEY", egress.HeaderGoogAPIKey}}},
}

func agentKeyByName(name string) *AgentKey {
	for i := range AgentKeys {
		if AgentKeys[i].Name == name {
			return &AgentKeys[i]
		}
	}
	return nil
}

func agentKeyOf(agentName string) *AgentKey {
	for i := range AgentKeys {
		if AgentKeys[i].Agent == agentName {
			return &AgentKeys[i]
		}
	}
	return nil
}

// placeholderVar is the variable a session gets the placeholder in for a
// route sent with header h: the agent's first key variable of that kind.
func (k *AgentKey) placeholderVar(h egress.CredentialHeader) string {
	for _, kv := range k.Keys {
		if kv.Header == h {
			return kv.Var
		}
	}
	return k.Keys[0].Var
}

func (k *AgentKey) vars() []string {
	out := make([]string, len(k.Keys))
	for i, kv := range k.Keys {
		out[i] = kv.Var
	}
	return out
}

// Source is one place a credential's secret may come from.
type Source struct {
	// Var is the agent's variable this source stands for ("" for a
	// configured credential).
	Var    string
	Header egress.CredentialHeader
	// HostVar is the host variable that holds the secret, read in the
	// broker's environment or, when the broker lacks it, supplied by a
	// session ("" = none).
	HostVar string
	// Keychain is read when HostVar is unset or empty in the broker's
	// environment.
	Keychain *config.SecretRef
}

// Spec is one credential of the plan.
type Spec struct {
	Name     string
	Upstream string
	// Sources, in order: the broker uses the first it can read; if it can
	// read none, a session may supply a HostVar (the first supplied wins).
	Sources []Source
	CA      string // PEM file of extra roots for this upstream; "" = system roots
	// Key is set when the credential is an agent's key (implicit, or
	// configured under the agent key's name): the session then gets the
	// agent's base URL variable and a placeholder.
	Key *AgentKey
	// Implicit is set for an agent's own key not configured as a
	// [credentials] table.
	Implicit bool
	// Withholds are session variables this credential replaces: never put
	// in the session's environment.
	Withholds []string
	// Rules narrow the requests the broker serves with it (trusted config
	// only); nil allows all.
	Rules *egress.CredentialRules
}

// Plan lists the credentials a box's broker holds, by name: the
// configured ones and the box's agent's own key. It depends on the config
// alone (which environment has a key decides only where its value comes
// from), and only the box's broker calls it, once, when it starts.
// Outside broker mode there is no broker: Plan returns nothing, and
// configured credentials are a session error (see Check).
func Plan(c config.Settings) []Spec {
	if c.NetworkMode() != config.NetworkBroker {
		return nil
	}
	var out []Spec
	for _, n := range config.SortedKeys(c.Credentials) {
		cr := c.Credentials[n]
		s := Spec{Name: n, Upstream: cr.Upstream, CA: cr.CA, Key: agentKeyByName(n), Rules: cr.Rules(),
			Sources: []Source{{Header: egress.CredentialHeader(cr.Header), HostVar: cr.EnvFromHost, Keychain: cr.Keychain}}}
		if s.Key != nil {
			s.Sources[0].Var = s.Key.placeholderVar(s.Sources[0].Header)
			s.Withholds = s.Key.vars()
		}
		out = append(out, s)
	}
	if k := agentKeyOf(c.Agent); k != nil && c.AgentCreds != config.AgentCredsForwarded {
		if _, configured := c.Credentials[k.Name]; !configured {
			out = append(out, implicit(c, k))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// implicit turns an agent's key into a brokered credential: each key
// variable in the agent's precedence, from env_from_host, keychain_env (an
// exported variable first) or the host environment, in launchenv's stage
// order.
func implicit(c config.Settings, k *AgentKey) Spec {
	s := Spec{Name: k.Name, Upstream: k.Upstream, Key: k, Implicit: true, Withholds: k.vars()}
	for _, kv := range k.Keys {
		src := Source{Var: kv.Var, Header: kv.Header, HostVar: kv.Var}
		if hv, ok := c.EnvFromHost[kv.Var]; ok {
			src.HostVar = hv
		} else if ref, ok := c.KeychainEnv[kv.Var]; ok {
			r := ref
			src.Keychain = &r
		}
		s.Sources = append(s.Sources, src)
	}
	return s
}

// Check reports configured credentials that cannot be brokered: the box
// has no broker outside broker mode.
func Check(c config.Settings) error {
	if len(c.Credentials) > 0 && c.NetworkMode() != config.NetworkBroker {
		return fmt.Errorf("credentials need network = \"broker\" (this box is %q): only the broker can hold them", c.NetworkMode())
	}
	return nil
}

// Var is a session variable a route sets; none holds a secret.
type Var struct{ Name, Value string }

// BaseURL is where the box reaches credential name through its broker with
// a session's token, broker being "http://HOST:PORT" as the guest sees it.
func BaseURL(broker, token, name string) string {
	return strings.TrimRight(broker, "/") + egress.CredentialPrefix + token + "/" + name
}

func keychainSecret(store secret.Store, ref config.SecretRef) egress.SecretFunc {
	var mu sync.Mutex
	var val string
	var at time.Time
	return func(ctx context.Context) (string, error) {
		mu.Lock()
		if val != "" && time.Since(at) < time.Minute {
			v := val
			mu.Unlock()
			return v, nil
		}
		mu.Unlock()
		if store == nil {
			return "", fmt.Errorf("no keychain for service %q account %q", ref.Service, ref.Account)
		}
		// Not under mu: a read may wait minutes on a Keychain dialog, and
		// each request must give up at its own deadline. The broker's
		// store is a secret.Shared, which reads an item once at a time and
		// remembers a refusal, so concurrent requests join one read.
		v, err := store.Get(ctx, ref.Service, ref.Account)
		if err != nil {
			return "", err
		}
		mu.Lock()
		val, at = v, time.Now()
		mu.Unlock()
		return v, nil
	}
}

// maxCAFile caps a CA file: a bundle of a few hundred certificates.
const maxCAFile = 4 << 20

func staticSecret(v string) egress.SecretFunc {
	return func(context.Context) (string, error) { return v, nil }
}

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

func addUnique(out []string, vs ...string) []string {
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
