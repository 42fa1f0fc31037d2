// Package launchenv assembles the environment of a corral session: the
// variables the host hands to the agent in the box. Every session (CLI and
// app) calls Assemble once and gets an Env it can log by name and hand to
// ssh without the values ever touching argv, a file or a log.
//
// # Stages
//
// Assemble runs these stages in order; each Var records the Stage that set
// it:
//
//  0. broker: for each credential route the box's broker serves
//     (Input.Brokered, asked from the broker by core/box), the agent's
//     base URL variable and a placeholder key, or git's insteadOf for the
//     upstream (core/credential Served.SessionVars). These win over every
//     later stage: a repository's env cannot point an agent elsewhere.
//  1. env_from_host: NAME = "HOST_VAR" copies the host's HOST_VAR (set,
//     even empty). An unset HOST_VAR refuses the session.
//  2. keychain_env: NAME = {service, account} uses the host's NAME when it
//     is exported and non-empty, else reads the OS keychain. A missing item
//     or an unusable keychain refuses the session.
//  3. env: the config's plain variables.
//  4. passthrough: forward_env and the agent's Passthrough names, each only
//     when set on the host.
//  5. terminal: TERM and COLORTERM (with a terminal), LANG and LC_ALL (when
//     set), COLUMNS and LINES (from the terminal size).
//  6. git identity: GIT_AUTHOR_NAME/EMAIL and GIT_COMMITTER_NAME/EMAIL from
//     the host's user.name and user.email.
//  7. git tokens: CORRAL_GIT_TOKEN_<HOST> for each git_tokens host (see
//     TokenVar), from the keychain (service "corral-git", account HOST),
//     else gh or glab on the host. A host without a token refuses the
//     session.
//  8. box identity: CORRAL_BOX, CORRAL_PROJECT and CORRAL_SESSION.
//  9. agent: the agent's own settings (agent.Agent Env, e.g. Gemini CLI's
//     folder trust), each only when no stage above set the name.
//
// Names in Input.Withhold, and the variables the broker says it holds
// (Input.Brokered), are skipped by every stage: the box's broker holds
// those secrets (core/credential) and the session never reads them. This
// package decides nothing about credentials: what is withheld and what
// replaces it is the broker's answer.
//
// # Override rule
//
// The first stage that sets a name wins: the stages are ordered from the
// most explicit and trusted source to the most automatic one. So the
// trusted, host-only keys (env_from_host, keychain_env) beat env, which a
// repository's .corral.toml may set; anything the config names beats what
// is forwarded automatically; and the host's environment beats values
// derived from git config. Two exceptions keep this unambiguous:
//
//   - Names starting with "CORRAL_" are reserved: only stages 7 and 8 set
//     them (box identity and git tokens therefore always win), and a config
//     that names one refuses the session.
//   - env_from_host and keychain_env naming the same variable refuses the
//     session: both are trusted and explicit, and guessing would be wrong.
//
// # Secrecy
//
// Values never appear in error messages, in Env's or Var's String,
// GoString or fmt output, or in slog output (LogValue gives names). The
// session hands them to ssh through its process environment as
// CORRAL_FWD_<NAME> (SSHEnviron), sent with the ssh option SendEnvOption
// and renamed by corral-launch in the box.
package launchenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/secret"
)

// Stage names where a variable came from; its value is the config key or
// stage name used in messages.
type Stage string

// Stages, in the order Assemble runs them.
const (
	StageBroker      Stage = "broker"
	StageEnvFromHost Stage = "env_from_host"
	StageKeychain    Stage = "keychain_env"
	StageEnv         Stage = "env"
	StagePassthrough Stage = "passthrough"
	StageTerminal    Stage = "terminal"
	StageGitIdentity Stage = "git_identity"
	StageGitToken    Stage = "git_tokens"
	StageBox         Stage = "box"
	StageAgent       Stage = "agent"
)

const (
	// ForwardPrefix marks a session variable in the ssh process's
	// environment; corral-launch in the box strips it.
	ForwardPrefix = "CORRAL_FWD_"
	// SendEnvOption is the ssh -o option that sends the forwarded
	// variables (sshd in the box has AcceptEnv CORRAL_FWD_*).
	SendEnvOption = "SendEnv=" + ForwardPrefix + "*"
	// ReservedPrefix starts the names only corral sets.
	ReservedPrefix = "CORRAL_"
	// TokenPrefix starts the git token variables (see TokenVar).
	TokenPrefix = "CORRAL_GIT_TOKEN_"
	// GitTokenService is the keychain service of git tokens; the account is
	// the host, e.g. service "corral-git" account "github.com".
	GitTokenService = "corral-git"
	// Box identity variables.
	BoxVar     = "CORRAL_BOX"
	ProjectVar = "CORRAL_PROJECT"
	SessionVar = "CORRAL_SESSION"
)

// Terminal describes the terminal a session is attached to.
type Terminal struct {
	Cols, Rows int // 0 when unknown
}

// GitConfigFunc returns the host's value of a git config key such as
// "user.name", or "" when it is unset.
type GitConfigFunc func(ctx context.Context, key string) (string, error)

// GitTokenFunc returns the token for a git host and a description of where
// it came from (never the value). A host without a token is an error.
type GitTokenFunc func(ctx context.Context, host string) (value, from string, err error)

// Input is everything a session's environment depends on.
type Input struct {
	Settings config.Settings // the effective config
	Agent    agent.Agent
	// Getenv reads the host environment (os.LookupEnv).
	Getenv func(string) (string, bool)
	// Secrets is the OS keychain (secret.Default()).
	Secrets secret.Store
	// GitConfig reads the host's git config; nil uses HostGitConfig(Project).
	GitConfig GitConfigFunc
	// GitToken finds git tokens; nil uses HostGitTokens{Store: Secrets}.
	GitToken GitTokenFunc
	// Box and Project are the box name and the project path (the same
	// path in the box).
	Box, Project string
	// Session is the session's ID (CORRAL_SESSION): the guest's proxy
	// settings carry it so the broker can say which session a connection
	// came from (for display only; guest/provision/40-network.sh).
	Session string
	// Terminal is the session's terminal, or nil when it has none.
	Terminal *Terminal
	// Logger gets debug lines (names, never values); nil discards.
	Logger *slog.Logger
	// Withhold names variables the box's broker holds instead of the box
	// (core/credential): env_from_host, keychain_env and passthrough skip
	// them, so their values never reach the session.
	Withhold []string
	// Brokered is what the box's broker serves this session (nil outside
	// broker mode, or when not asked, as by doctor): its routes' variables
	// are set first and what it holds is withheld. BrokerURL is the
	// broker as the guest reaches it, "http://HOST:PORT".
	Brokered  *credential.Served
	BrokerURL string
}

// Var is one session variable.
type Var struct {
	Name   string
	Source Stage
	// From says where the value came from, for humans: "host $GH_TOKEN",
	// `keychain service "s" account "a"`, "gh". Never the value.
	From  string
	value string
}

// Value returns the variable's value.
func (v Var) Value() string { return v.value }

// String gives the name and source, never the value.
func (v Var) String() string { return v.Name + " (" + string(v.Source) + ")" }

// GoString is String: %#v must not print the value either.
func (v Var) GoString() string { return "launchenv.Var{" + v.String() + "}" }

// Format keeps every fmt verb (%v, %+v, %#v, %s, %q) away from the value.
func (v Var) Format(f fmt.State, verb rune) { formatRedacted(f, verb, v.String(), v.GoString()) }

// Env is an assembled session environment, sorted by name.
type Env struct {
	vars []Var
}

var (
	_ fmt.Formatter  = Env{}
	_ fmt.Stringer   = Env{}
	_ fmt.GoStringer = Env{}
	_ slog.LogValuer = Env{}
	_ fmt.Formatter  = Var{}
)

// Vars returns the variables sorted by name.
func (e Env) Vars() []Var { return slices.Clone(e.vars) }

// Lookup returns the variable called name.
func (e Env) Lookup(name string) (Var, bool) {
	i, ok := slices.BinarySearchFunc(e.vars, name, func(v Var, n string) int { return strings.Compare(v.Name, n) })
	if !ok {
		return Var{}, false
	}
	return e.vars[i], true
}

// Names returns the variable names, sorted: what the audit log records.
func (e Env) Names() []string {
	out := make([]string, len(e.vars))
	for i, v := range e.vars {
		out[i] = v.Name
	}
	return out
}

// SSHEnviron returns "CORRAL_FWD_NAME=value" entries to append to the ssh
// process's environment (exec.Cmd.Env), never to its argv. Pass
// SendEnvOption to ssh so that it sends them.
func (e Env) SSHEnviron() []string {
	out := make([]string, len(e.vars))
	for i, v := range e.vars {
		out[i] = ForwardPrefix + v.Name + "=" + v.value
	}
	return out
}

// Environ returns base (usually os.Environ()) without any CORRAL_FWD_
// entries it already had, followed by SSHEnviron: what ssh sends is
// exactly this Env.
func (e Env) Environ(base []string) []string {
	out := make([]string, 0, len(base)+len(e.vars))
	for _, kv := range base {
		if !strings.HasPrefix(kv, ForwardPrefix) {
			out = append(out, kv)
		}
	}
	return append(out, e.SSHEnviron()...)
}

// String lists names and sources, never values.
func (e Env) String() string {
	parts := make([]string, len(e.vars))
	for i, v := range e.vars {
		parts[i] = v.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// GoString is String: %#v must not print values either.
func (e Env) GoString() string { return "launchenv.Env" + e.String() }

// Format keeps every fmt verb away from the values.
func (e Env) Format(f fmt.State, verb rune) { formatRedacted(f, verb, e.String(), e.GoString()) }

// LogValue logs the names only.
func (e Env) LogValue() slog.Value { return slog.AnyValue(e.Names()) }

func formatRedacted(f fmt.State, verb rune, s, gs string) {
	switch {
	case verb == 'v' && f.Flag('#'):
		_, _ = io.WriteString(f, gs)
	case verb == 'q':
		_, _ = io.WriteString(f, strconv.Quote(s))
	default:
		_, _ = io.WriteString(f, s)
	}
}

// Error is a refusal to start a session. It names the config key (e.g.
// "keychain_env.API_KEY") and carries a hint for the user; it never holds
// a value.
type Error struct {
	Key  string
	Err  error
	hint string
}

func (e *Error) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap returns the cause (e.g. a *secret.Error).
func (e *Error) Unwrap() error { return e.Err }

// Hint is a line telling the user what to do.
func (e *Error) Hint() string { return e.hint }

// ErrRefused is matched by every error Assemble returns for a missing or
// invalid variable source.
var ErrRefused = errors.New("session environment refused")

// Is makes errors.Is(err, ErrRefused) true for every *Error.
func (e *Error) Is(target error) bool { return target == ErrRefused }

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// TokenVar is the variable holding the git token of host:
// CORRAL_GIT_TOKEN_ and the host upper-cased with every character other
// than A-Z and 0-9 replaced by "_" ("github.com" gives
// CORRAL_GIT_TOKEN_GITHUB_COM). guest/corral-git-credential.sh computes
// the same name from git's host= line.
func TokenVar(host string) string {
	b := []byte(strings.ToUpper(host))
	for i, c := range b {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			b[i] = '_'
		}
	}
	return TokenPrefix + string(b)
}

// lookupTimeout bounds each host command (git, gh, glab).
const lookupTimeout = 10 * time.Second

type assembler struct {
	in       Input
	withhold []string
	vars     map[string]Var
	errs     []error
	log      *slog.Logger
	// storeDown is set once the keychain was unavailable, so later lookups
	// fail fast instead of each waiting for its timeout.
	storeDown error
}

func (a *assembler) fail(key string, err error, hint string) {
	a.errs = append(a.errs, &Error{Key: key, Err: err, hint: hint})
}

// set adds v unless an earlier stage set the name (the first stage wins)
// or the broker holds it (Input.Withhold).
func (a *assembler) set(v Var) {
	if slices.Contains(a.withhold, v.Name) {
		a.log.Debug("session variable withheld: the broker holds it", "name", v.Name, "stage", v.Source)
		return
	}
	if old, ok := a.vars[v.Name]; ok {
		a.log.Debug("session variable already set by an earlier stage", "name", v.Name, "kept", old.Source, "dropped", v.Source)
		return
	}
	if strings.IndexByte(v.value, 0) >= 0 {
		a.fail(string(v.Source)+"."+v.Name, errors.New("value contains a NUL byte"), "")
		return
	}
	a.vars[v.Name] = v
}

// checkName refuses names that cannot be variables or are reserved.
func (a *assembler) checkName(key, name string) bool {
	switch {
	case !nameRe().MatchString(name):
		a.fail(key, fmt.Errorf("%q is not a variable name", name), "")
		return false
	case strings.HasPrefix(name, ReservedPrefix):
		a.fail(key, fmt.Errorf("variable names starting with %s are reserved for corral", ReservedPrefix), "rename the variable in the config")
		return false
	}
	return true
}

func (a *assembler) getenv(name string) (string, bool) {
	if a.in.Getenv == nil {
		return "", false
	}
	return a.in.Getenv(name)
}

// Assemble builds a session's environment. It refuses (returns an error
// matching ErrRefused, listing every problem) when a variable the config
// requires cannot be supplied; the error names config keys, host variables
// and keychain items, never values.
func Assemble(ctx context.Context, in Input) (Env, error) {
	a := &assembler{in: in, vars: map[string]Var{}, log: in.Logger, withhold: slices.Clone(in.Withhold)}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	c := in.Settings
	if err := credential.Check(c); err != nil {
		return Env{}, err
	}

	// 0. broker
	if b := in.Brokered; b != nil {
		for _, w := range b.Withheld() {
			if !slices.Contains(a.withhold, w) {
				a.withhold = append(a.withhold, w)
			}
		}
		for _, v := range b.SessionVars(in.BrokerURL) {
			a.vars[v.Name] = Var{Name: v.Name, Source: StageBroker, From: "the box's broker", value: v.Value}
		}
	}

	// 1. env_from_host
	for _, name := range config.SortedKeys(c.EnvFromHost) {
		key := "env_from_host." + name
		if !a.checkName(key, name) {
			continue
		}
		if _, dup := c.KeychainEnv[name]; dup {
			a.fail(key, fmt.Errorf("keychain_env.%s sets the same variable", name), "keep one of env_from_host."+name+" and keychain_env."+name)
			continue
		}
		if slices.Contains(a.withhold, name) {
			continue // brokered: the broker reads it, the session never does
		}
		hv := c.EnvFromHost[name]
		val, ok := a.getenv(hv)
		if !ok {
			a.fail(key, fmt.Errorf("host variable %s is not set", hv), fmt.Sprintf("export %s on the host, or remove %s from the config", hv, key))
			continue
		}
		a.set(Var{Name: name, Source: StageEnvFromHost, From: "host $" + hv, value: val})
	}

	// 2. keychain_env
	for _, name := range config.SortedKeys(c.KeychainEnv) {
		key := "keychain_env." + name
		if !a.checkName(key, name) {
			continue
		}
		if _, dup := c.EnvFromHost[name]; dup {
			continue // reported above
		}
		if slices.Contains(a.withhold, name) {
			continue // brokered: the broker reads the keychain, the session never does
		}
		if val, ok := a.getenv(name); ok && val != "" {
			a.set(Var{Name: name, Source: StageKeychain, From: "host $" + name, value: val})
			continue
		}
		ref := c.KeychainEnv[name]
		if a.storeDown != nil {
			a.fail(key, fmt.Errorf("not read: service %q account %q: %w", ref.Service, ref.Account, a.storeDown), "")
			continue
		}
		val, err := a.secretGet(ctx, ref.Service, ref.Account)
		if err != nil {
			hint := fmt.Sprintf("or export %s on the host", name)
			var h interface{ Hint() string }
			if errors.As(err, &h) && h.Hint() != "" {
				hint = h.Hint() + " (" + hint + ")"
			}
			a.fail(key, err, hint)
			continue
		}
		a.set(Var{Name: name, Source: StageKeychain, From: fmt.Sprintf("keychain service %q account %q", ref.Service, ref.Account), value: val})
	}

	// 3. env
	for _, name := range config.SortedKeys(c.Env) {
		if a.checkName("env."+name, name) {
			a.set(Var{Name: name, Source: StageEnv, From: "config", value: c.Env[name]})
		}
	}

	// 4. passthrough: forward_env, then the agent's list.
	for _, name := range c.ForwardEnv {
		if a.checkName("forward_env", name) {
			a.passthrough(name)
		}
	}
	for _, name := range in.Agent.Passthrough {
		a.passthrough(name)
	}

	// 5. terminal
	if in.Terminal != nil {
		a.fromHost(StageTerminal, "TERM")
		a.fromHost(StageTerminal, "COLORTERM")
	}
	a.fromHost(StageTerminal, "LANG")
	a.fromHost(StageTerminal, "LC_ALL")
	if t := in.Terminal; t != nil && t.Cols > 0 && t.Rows > 0 {
		a.set(Var{Name: "COLUMNS", Source: StageTerminal, From: "terminal size", value: strconv.Itoa(t.Cols)})
		a.set(Var{Name: "LINES", Source: StageTerminal, From: "terminal size", value: strconv.Itoa(t.Rows)})
	}

	// 6. git identity
	a.gitIdentity(ctx)

	// 7. git tokens
	a.gitTokens(ctx)

	// 8. box identity
	if in.Box != "" {
		a.vars[BoxVar] = Var{Name: BoxVar, Source: StageBox, From: "corral", value: in.Box}
	}
	if in.Project != "" {
		a.vars[ProjectVar] = Var{Name: ProjectVar, Source: StageBox, From: "corral", value: in.Project}
	}
	if in.Session != "" {
		a.vars[SessionVar] = Var{Name: SessionVar, Source: StageBox, From: "corral", value: in.Session}
	}

	// 9. agent
	for _, name := range config.SortedKeys(in.Agent.Env) {
		if a.checkName("agent "+in.Agent.Name, name) {
			a.set(Var{Name: name, Source: StageAgent, From: "agent " + in.Agent.Name, value: in.Agent.Env[name]})
		}
	}

	if len(a.errs) > 0 {
		return Env{}, errors.Join(a.errs...)
	}
	env := Env{vars: make([]Var, 0, len(a.vars))}
	for _, v := range a.vars {
		env.vars = append(env.vars, v)
	}
	sort.Slice(env.vars, func(i, j int) bool { return env.vars[i].Name < env.vars[j].Name })
	return env, nil
}

func (a *assembler) secretGet(ctx context.Context, service, account string) (string, error) {
	if a.in.Secrets == nil {
		return "", secret.Unavailable(service, account, errors.New("no secret store configured"), "")
	}
	v, err := a.in.Secrets.Get(ctx, service, account)
	if errors.Is(err, secret.ErrUnavailable) {
		a.storeDown = err
	}
	return v, err
}

func (a *assembler) passthrough(name string) {
	if val, ok := a.getenv(name); ok {
		a.set(Var{Name: name, Source: StagePassthrough, From: "host $" + name, value: val})
	}
}

func (a *assembler) fromHost(s Stage, name string) {
	if val, ok := a.getenv(name); ok && val != "" {
		a.set(Var{Name: name, Source: s, From: "host $" + name, value: val})
	}
}

func (a *assembler) gitIdentity(ctx context.Context) {
	read := a.in.GitConfig
	if read == nil {
		read = HostGitConfig(a.in.Project)
	}
	for _, k := range []struct{ key, author, committer string }{
		{"user.name", "GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"},
		{"user.email", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"},
	} {
		val, err := read(ctx, k.key)
		if err != nil {
			// Not fatal: the box's git then asks for an identity itself.
			a.log.Debug("reading host git config", "key", k.key, "err", err)
			continue
		}
		if val == "" {
			continue
		}
		from := "host git config " + k.key
		a.set(Var{Name: k.author, Source: StageGitIdentity, From: from, value: val})
		a.set(Var{Name: k.committer, Source: StageGitIdentity, From: from, value: val})
	}
}

func (a *assembler) gitTokens(ctx context.Context) {
	hosts := a.in.Settings.GitTokens
	if len(hosts) == 0 {
		return
	}
	get := a.in.GitToken
	if get == nil {
		get = HostGitTokens{Store: a.in.Secrets}.Token
	}
	seen := map[string]string{}
	for _, host := range hosts {
		key := fmt.Sprintf("git_tokens[%q]", host)
		name := TokenVar(host)
		if other, dup := seen[name]; dup {
			if other != host {
				a.fail(key, fmt.Errorf("hosts %q and %q both map to %s", other, host, name), "")
			}
			continue
		}
		seen[name] = host
		val, from, err := get(ctx, host)
		if err == nil && val == "" {
			err = errors.New("empty token")
		}
		if err != nil {
			a.fail(key, err, tokenHint(host))
			continue
		}
		a.vars[name] = Var{Name: name, Source: StageGitToken, From: from, value: val}
	}
}

func tokenHint(host string) string {
	return fmt.Sprintf("store one: corral secret set --service %s --account %s (or log in on the host: gh auth login --hostname %s)", GitTokenService, host, host)
}
