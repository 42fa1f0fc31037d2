package credential

import (
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/secret"
)

// Holder is the broker's side of the plan: the credentials it serves now,
// those it still waits for, and the answers to its box's sessions.
type Holder struct {
	broker   *egress.CredentialBroker
	logger   *slog.Logger
	relayDir string

	mu      sync.Mutex
	served  map[string]Route
	pending []pendingSpec
	// keychain are the items the broker reads (refs, never values): a
	// session with a terminal settles them first (secret.Decide), so
	// the Keychain's "allow access" question is asked while a person is
	// there, not by the broker in the background.
	keychain []secret.Ref
}

// pendingSpec is a credential that waits for a session to supply a source.
type pendingSpec struct {
	Spec
	pool *x509.CertPool
}

// HolderConfig configures NewHolder.
type HolderConfig struct {
	// Store is the keychain; Getenv the broker's own environment.
	Store  secret.Store
	Getenv func(string) (string, bool)
	// Egress configures the credential broker (resolver, log, BoundOnly).
	// Its Credentials are set from the plan.
	Egress egress.CredentialConfig
	// RootCAs, when set for a credential's name, replaces its CA file's
	// roots (tests reach httptest upstreams).
	RootCAs map[string]*x509.CertPool
	// Upstreams, when set for a credential's name, replaces its upstream
	// (tests).
	Upstreams map[string]string
	// RelayDir is the only directory a session's relay socket may be in
	// (the run directory, where the laptop's ssh puts it); "" refuses
	// every relay.
	RelayDir string
	Logger   *slog.Logger
}

// NewHolder reads the plan's sources in the broker's environment and
// keychain. A credential none of whose sources the broker can read waits
// for a session to supply one of its host variables (Answer).
func NewHolder(specs []Spec, cfg HolderConfig) (*Holder, error) {
	h := &Holder{served: map[string]Route{}, logger: cfg.Logger, relayDir: cfg.RelayDir}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	var creds []egress.Credential
	var errs []error
	for _, s := range specs {
		if u, ok := cfg.Upstreams[s.Name]; ok {
			s.Upstream = u
		}
		pool := cfg.RootCAs[s.Name]
		if pool == nil && s.CA != "" {
			p, err := loadCA(s.CA)
			if err != nil {
				errs = append(errs, fmt.Errorf("credential %s: %w", s.Name, err))
				continue
			}
			pool = p
		}
		c, src, ok := source(s, cfg)
		if !ok {
			h.pending = append(h.pending, pendingSpec{s, pool})
			continue
		}
		c.RootCAs = pool
		creds = append(creds, c)
		h.served[s.Name] = route(s, src)
		if src.Keychain != nil && c.Secret != nil && (src.HostVar == "" || !hostVarSet(cfg, src.HostVar)) {
			h.keychain = append(h.keychain, secret.Ref{Service: src.Keychain.Service, Account: src.Keychain.Account})
		}
	}
	ec := cfg.Egress
	ec.Credentials = creds
	b, err := egress.NewCredentialBroker(ec)
	if err != nil {
		errs = append(errs, err)
	}
	h.broker = b
	return h, errors.Join(errs...)
}

// source picks the first source of s the broker can read itself.
func source(s Spec, cfg HolderConfig) (egress.Credential, Source, bool) {
	for _, src := range s.Sources {
		c := egress.Credential{Name: s.Name, Upstream: s.Upstream, Header: src.Header, Rules: s.Rules}
		if src.HostVar != "" && cfg.Getenv != nil {
			if v, ok := cfg.Getenv(src.HostVar); ok && v != "" {
				c.Secret = staticSecret(v)
				return c, src, true
			}
		}
		if src.Keychain != nil {
			c.Secret = keychainSecret(cfg.Store, *src.Keychain)
			return c, src, true
		}
	}
	return egress.Credential{}, Source{}, false
}

func hostVarSet(cfg HolderConfig, name string) bool {
	if cfg.Getenv == nil {
		return false
	}
	v, ok := cfg.Getenv(name)
	return ok && v != ""
}

func route(s Spec, src Source) Route {
	r := Route{Name: s.Name, Upstream: s.Upstream, Withholds: append([]string(nil), s.Withholds...)}
	if s.Key != nil {
		r.BaseURLVar = s.Key.BaseURLVar
		r.Var = src.Var
		if r.Var == "" {
			r.Var = s.Key.placeholderVar(src.Header)
		}
	}
	return r
}

// Broker is the credential broker that serves the routes.
func (h *Holder) Broker() *egress.CredentialBroker { return h.broker }

// Served lists the credentials served now, by name.
func (h *Holder) Served() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.served))
	for n := range h.served {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Wants lists the host variables the broker waits for: the sources of the
// credentials it could not read itself.
func (h *Holder) Wants() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.pending {
		for _, src := range s.Sources {
			if src.HostVar != "" {
				out = addUnique(out, src.HostVar)
			}
		}
	}
	return out
}

// maxSupplied caps a supplied secret.
const maxSupplied = 16 << 10

var sessionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9-]{1,64}$`) })

// Answer takes what a session supplies (values of wanted host variables;
// anything else is ignored) and returns the routes served, with a token
// for session. A supplied value starts serving its credential for the
// broker's lifetime; a credential already served keeps its source.
func (h *Holder) Answer(session string, supply map[string]string) (Served, error) {
	return h.AnswerRelayed(session, supply, nil)
}

// relaySocketRe is the name ssh gives a relay's socket on this host
// (core/remote placeRelay).
var relaySocketRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^relay-[0-9a-f]{16}\.sock$`) })

// checkRelay checks a session's relay before the broker dials it: a
// socket (not a link) named as core/remote names it, directly in the
// relay directory, owned by this user.
func (h *Holder) checkRelay(r *egress.Relay) error {
	if !egress.ValidRelayToken(r.Token) {
		return errors.New("relay token: not 64 lowercase hex digits")
	}
	return checkRelaySocket(h.relayDir, r.Socket)
}

// checkRelaySocket checks that socket is a relay's forwarded socket in
// dir: a socket (not a link) named as core/remote names it, directly in
// dir, owned by this user.
func checkRelaySocket(dir, socket string) error {
	if dir == "" || filepath.Clean(socket) != socket || filepath.Dir(socket) != filepath.Clean(dir) || !relaySocketRe().MatchString(filepath.Base(socket)) {
		return fmt.Errorf("relay socket %q: not a relay socket of this host's run directory", truncateText(socket, 128))
	}
	fi, err := os.Lstat(socket)
	if err != nil {
		return fmt.Errorf("relay socket: %w", err)
	}
	if fi.Mode().Type() != fs.ModeSocket || !ownedByMe(fi) {
		return fmt.Errorf("relay socket %s: not a socket of this user", socket)
	}
	return nil
}

// RemoveRelaySocket removes a session's forwarded relay socket from dir
// (this host's run directory) once the session has ended: sshd leaves
// the file of a -R forward behind. Only a socket checkRelaySocket accepts
// is removed; one already gone is no error.
func RemoveRelaySocket(dir, socket string) error {
	if err := checkRelaySocket(dir, socket); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the relay socket: %w", err)
	}
	return nil
}

// AnswerRelayed is Answer for a session that brings the laptop's
// credential relay (nil: none). The credentials the broker still waits
// for (none of their sources readable here, none supplied) become
// relayed, for the broker's lifetime: each request is sent to the relay
// of its own session, and a session without one is refused. The relay's
// socket and token are this session's alone.
func (h *Holder) AnswerRelayed(session string, supply map[string]string, relay *egress.Relay) (Served, error) {
	if !sessionRe().MatchString(session) {
		return Served{}, fmt.Errorf("session %q: not a session id", truncateText(session, 64))
	}
	if relay != nil {
		if err := h.checkRelay(relay); err != nil {
			return Served{}, err
		}
	}
	h.mu.Lock()
	var errs []error
	rest := h.pending[:0:0]
	for _, s := range h.pending {
		added := false
		for _, src := range s.Sources {
			v := supply[src.HostVar]
			if src.HostVar == "" || v == "" {
				continue
			}
			if len(v) > maxSupplied || strings.ContainsAny(v, "\r\n\x00") {
				errs = append(errs, fmt.Errorf("credential %s: the value of %s is too long or holds a line break or NUL", s.Name, src.HostVar))
				break
			}
			c := egress.Credential{Name: s.Name, Upstream: s.Upstream, Header: src.Header, Secret: staticSecret(v), RootCAs: s.pool, Rules: s.Rules}
			if err := h.broker.Add(c); err != nil {
				errs = append(errs, err)
				break
			}
			h.served[s.Name] = route(s.Spec, src)
			h.logger.Info("brokered credential supplied by a session", "credential", s.Name, "variable", src.HostVar, "session", session)
			added = true
			break
		}
		if !added && relay != nil {
			c := egress.Credential{Name: s.Name, Upstream: s.Upstream, Rules: s.Rules, Relayed: true}
			if err := h.broker.Add(c); err != nil {
				errs = append(errs, err)
			} else {
				h.served[s.Name] = route(s.Spec, Source{})
				h.logger.Info("brokered credential relayed from the laptop", "credential", s.Name, "session", session)
				added = true
			}
		}
		if !added {
			rest = append(rest, s)
		}
	}
	h.pending = rest
	out := Served{Keychain: append([]secret.Ref(nil), h.keychain...)}
	for _, n := range sortedNames(h.served) {
		out.Routes = append(out.Routes, h.served[n])
	}
	h.mu.Unlock()
	if len(errs) > 0 {
		return Served{}, errors.Join(errs...)
	}
	if len(out.Routes) > 0 {
		newToken := h.broker.NewToken
		if relay != nil {
			newToken = func(session string) (string, error) { return h.broker.NewRelayToken(session, *relay) }
		}
		tok, err := newToken(session)
		if err != nil {
			return Served{}, err
		}
		out.Token = tok
	}
	return out, nil
}

func sortedNames(m map[string]Route) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func truncateText(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
