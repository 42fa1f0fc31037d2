package launchenv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/secret"
)

// hostEnv is a fake host environment.
func hostEnv(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func noGit(context.Context, string) (string, error) { return "", nil }

func noTokens(_ context.Context, host string) (string, string, error) {
	return "", "", fmt.Errorf("no token for host %q", host)
}

// base is an Input with no host state at all.
func base() Input {
	return Input{
		Getenv:    hostEnv(),
		Secrets:   &secret.Memory{},
		GitConfig: noGit,
		GitToken:  noTokens,
		Box:       "web-3f2a1c",
		Project:   "/home/dev/src/web",
	}
}

func mustAssemble(t *testing.T, in Input) Env {
	t.Helper()
	env, err := Assemble(context.Background(), in)
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	return env
}

// sources maps each name to "source=value" for compact comparisons.
func sources(e Env) map[string]string {
	out := map[string]string{}
	for _, v := range e.Vars() {
		out[v.Name] = string(v.Source) + "=" + v.Value()
	}
	return out
}

func TestAssembleAllStages(t *testing.T) {
	ctx := context.Background()
	store := &secret.Memory{}
	if err := store.Set(ctx, "anthropic", "default", "sk-keychain"); err != nil {
		t.Fatal(err)
	}
	in := base()
	in.Secrets = store
	in.Settings = config.Settings{
		EnvFromHost: map[string]string{"NPM_TOKEN": "HOST_NPM"},
		KeychainEnv: map[string]config.SecretRef{"ANTHROPIC_API_KEY": {Service: "anthropic", Account: "default"}},
		Env:         map[string]string{"EDITOR": "vi"},
		ForwardEnv:  []string{"AWS_REGION", "NOT_SET"},
		GitTokens:   []string{"github.com"},
	}
	in.Agent, _ = agent.Find(nil, "claude")
	in.Getenv = hostEnv("HOST_NPM", "npm-1", "AWS_REGION", "eu-west-1", "CLAUDE_CODE_OAUTH_TOKEN", "oauth-1",
		"TERM", "xterm-256color", "COLORTERM", "truecolor", "LANG", "C.UTF-8", "UNRELATED", "x")
	in.Terminal = &Terminal{Cols: 120, Rows: 40}
	in.GitConfig = func(_ context.Context, key string) (string, error) {
		return map[string]string{"user.name": "Dev Example", "user.email": "dev@example.test"}[key], nil
	}
	in.GitToken = func(_ context.Context, host string) (string, string, error) { return "ghp-" + host, "test", nil }

	env := mustAssemble(t, in)
	want := map[string]string{
		"NPM_TOKEN":                   "env_from_host=npm-1",
		"ANTHROPIC_API_KEY":           "keychain_env=sk-keychain",
		"EDITOR":                      "env=vi",
		"AWS_REGION":                  "passthrough=eu-west-1",
		"CLAUDE_CODE_OAUTH_TOKEN":     "passthrough=oauth-1",
		"TERM":                        "terminal=xterm-256color",
		"COLORTERM":                   "terminal=truecolor",
		"LANG":                        "terminal=C.UTF-8",
		"COLUMNS":                     "terminal=120",
		"LINES":                       "terminal=40",
		"GIT_AUTHOR_NAME":             "git_identity=Dev Example",
		"GIT_COMMITTER_NAME":          "git_identity=Dev Example",
		"GIT_AUTHOR_EMAIL":            "git_identity=dev@example.test",
		"GIT_COMMITTER_EMAIL":         "git_identity=dev@example.test",
		"CORRAL_GIT_TOKEN_GITHUB_COM": "git_tokens=ghp-github.com",
		"CORRAL_BOX":                  "box=web-3f2a1c",
		"CORRAL_PROJECT":              "box=/home/dev/src/web",
	}
	if got := sources(env); !reflect.DeepEqual(got, want) {
		t.Errorf("vars:\n got %v\nwant %v", got, want)
	}
	wantNames := []string{"ANTHROPIC_API_KEY", "AWS_REGION", "CLAUDE_CODE_OAUTH_TOKEN", "COLORTERM", "COLUMNS",
		"CORRAL_BOX", "CORRAL_GIT_TOKEN_GITHUB_COM", "CORRAL_PROJECT", "EDITOR",
		"GIT_AUTHOR_EMAIL", "GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_NAME",
		"LANG", "LINES", "NPM_TOKEN", "TERM"}
	if got := env.Names(); !reflect.DeepEqual(got, wantNames) {
		t.Errorf("Names() = %v", got)
	}
	ssh := env.SSHEnviron()
	if len(ssh) != len(wantNames) || ssh[0] != "CORRAL_FWD_ANTHROPIC_API_KEY=sk-keychain" || ssh[len(ssh)-1] != "CORRAL_FWD_TERM=xterm-256color" {
		t.Errorf("SSHEnviron() = %q", ssh)
	}
	if v, ok := env.Lookup("ANTHROPIC_API_KEY"); !ok || v.From != `keychain service "anthropic" account "default"` {
		t.Errorf("Lookup: %+v %v", v.From, ok)
	}
}

func TestNoTerminal(t *testing.T) {
	in := base()
	in.Getenv = hostEnv("TERM", "xterm", "LANG", "C.UTF-8", "LC_ALL", "")
	got := sources(mustAssemble(t, in))
	if _, ok := got["TERM"]; ok {
		t.Error("TERM forwarded without a terminal")
	}
	if _, ok := got["LC_ALL"]; ok {
		t.Error("empty LC_ALL forwarded")
	}
	if got["LANG"] != "terminal=C.UTF-8" {
		t.Errorf("LANG: %q", got["LANG"])
	}
	if _, ok := got["COLUMNS"]; ok {
		t.Error("COLUMNS without a size")
	}
}

func TestOverrideRule(t *testing.T) {
	ctx := context.Background()
	store := &secret.Memory{}
	_ = store.Set(ctx, "s", "a", "from-keychain")
	in := base()
	in.Secrets = store
	in.Settings = config.Settings{
		EnvFromHost: map[string]string{"A": "HOST_A"},
		KeychainEnv: map[string]config.SecretRef{"K": {Service: "s", Account: "a"}, "KH": {Service: "missing", Account: "x"}},
		// env loses to the trusted keys; passthrough and git identity lose to env.
		Env:        map[string]string{"A": "env-a", "K": "env-k", "F": "env-f", "GIT_AUTHOR_NAME": "env-git", "TERM": "dumb"},
		ForwardEnv: []string{"F", "COLUMNS", "GIT_COMMITTER_NAME"},
	}
	in.Getenv = hostEnv("HOST_A", "host-a", "KH", "exported", "F", "host-f", "COLUMNS", "99",
		"GIT_COMMITTER_NAME", "host-committer", "TERM", "xterm")
	in.Terminal = &Terminal{Cols: 80, Rows: 24}
	in.GitConfig = func(_ context.Context, key string) (string, error) { return "git-" + key, nil }
	got := sources(mustAssemble(t, in))
	for name, want := range map[string]string{
		"A":                  "env_from_host=host-a", // trusted beats env
		"K":                  "keychain_env=from-keychain",
		"KH":                 "keychain_env=exported", // exported on the host: keychain not read
		"F":                  "env=env-f",             // env beats passthrough
		"TERM":               "env=dumb",              // env beats terminal
		"COLUMNS":            "passthrough=99",        // forward_env beats the terminal size
		"GIT_AUTHOR_NAME":    "env=env-git",
		"GIT_COMMITTER_NAME": "passthrough=host-committer", // host env beats git config
		"GIT_AUTHOR_EMAIL":   "git_identity=git-user.email",
	} {
		if got[name] != want {
			t.Errorf("%s = %q, want %q", name, got[name], want)
		}
	}
}

func TestKeychainEmptyHostValueDoesNotShadow(t *testing.T) {
	store := &secret.Memory{}
	_ = store.Set(context.Background(), "s", "a", "kc")
	in := base()
	in.Secrets = store
	in.Settings.KeychainEnv = map[string]config.SecretRef{"K": {Service: "s", Account: "a"}}
	in.Getenv = hostEnv("K", "")
	if got := sources(mustAssemble(t, in))["K"]; got != "keychain_env=kc" {
		t.Errorf("K = %q", got)
	}
}

func TestEnvFromHostEmptyIsSet(t *testing.T) {
	in := base()
	in.Settings.EnvFromHost = map[string]string{"A": "HOST_A"}
	in.Getenv = hostEnv("HOST_A", "")
	if got := sources(mustAssemble(t, in))["A"]; got != "env_from_host=" {
		t.Errorf("A = %q", got)
	}
}

// refused runs Assemble expecting a refusal and returns the *Error for key.
func refused(t *testing.T, in Input, key string) *Error {
	t.Helper()
	env, err := Assemble(context.Background(), in)
	if err == nil {
		t.Fatalf("Assemble succeeded: %v", env)
	}
	if !errors.Is(err, ErrRefused) {
		t.Errorf("%v does not match ErrRefused", err)
	}
	if len(env.Names()) != 0 {
		t.Errorf("refused Env is not empty: %v", env)
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var le *Error
		if errors.As(e, &le) && le.Key == key {
			return le
		}
	}
	t.Fatalf("no error for %s in: %v", key, err)
	return nil
}

func TestFailClosed(t *testing.T) {
	const leak = "s3cr3t-value"
	tests := []struct {
		name    string
		mod     func(*Input)
		key     string
		msg     string
		hint    string
		matches error
	}{
		{
			name: "env_from_host unset",
			mod:  func(in *Input) { in.Settings.EnvFromHost = map[string]string{"NPM_TOKEN": "HOST_NPM"} },
			key:  "env_from_host.NPM_TOKEN",
			msg:  "env_from_host.NPM_TOKEN: host variable HOST_NPM is not set",
			hint: "export HOST_NPM on the host, or remove env_from_host.NPM_TOKEN from the config",
		},
		{
			name: "keychain item missing",
			mod: func(in *Input) {
				in.Settings.KeychainEnv = map[string]config.SecretRef{"API_KEY": {Service: "anthropic", Account: "work"}}
			},
			key:     "keychain_env.API_KEY",
			msg:     `keychain_env.API_KEY: secret not found: service "anthropic" account "work"`,
			hint:    "store it: corral secret set --service anthropic --account work (or export API_KEY on the host)",
			matches: secret.ErrNotFound,
		},
		{
			name: "keychain unavailable",
			mod: func(in *Input) {
				in.Secrets = &secret.Memory{Unavailable: true}
				in.Settings.KeychainEnv = map[string]config.SecretRef{"API_KEY": {Service: "anthropic", Account: "work"}}
			},
			key:     "keychain_env.API_KEY",
			msg:     `keychain_env.API_KEY: secret store unavailable: service "anthropic" account "work"`,
			hint:    "secret.Memory is set unavailable (or export API_KEY on the host)",
			matches: secret.ErrUnavailable,
		},
		{
			name: "git token missing",
			mod:  func(in *Input) { in.Settings.GitTokens = []string{"github.com"} },
			key:  `git_tokens["github.com"]`,
			msg:  `git_tokens["github.com"]: no token for host "github.com"`,
			hint: "store one: corral secret set --service corral-git --account github.com (or log in on the host: gh auth login --hostname github.com)",
		},
		{
			name: "git token empty",
			mod: func(in *Input) {
				in.Settings.GitTokens = []string{"example.test"}
				in.GitToken = func(context.Context, string) (string, string, error) { return "", "x", nil }
			},
			key:  `git_tokens["example.test"]`,
			msg:  `git_tokens["example.test"]: empty token`,
			hint: "store one: corral secret set --service corral-git --account example.test (or log in on the host: gh auth login --hostname example.test)",
		},
		{
			name: "git token hosts collide",
			mod: func(in *Input) {
				in.Settings.GitTokens = []string{"a-b.example.test", "a.b.example.test"}
				in.GitToken = func(context.Context, string) (string, string, error) { return leak, "x", nil }
			},
			key: `git_tokens["a.b.example.test"]`,
			msg: `git_tokens["a.b.example.test"]: hosts "a-b.example.test" and "a.b.example.test" both map to CORRAL_GIT_TOKEN_A_B_EXAMPLE_TEST`,
		},
		{
			name: "env_from_host and keychain_env name the same variable",
			mod: func(in *Input) {
				in.Settings.EnvFromHost = map[string]string{"TOK": "HOST_TOK"}
				in.Settings.KeychainEnv = map[string]config.SecretRef{"TOK": {Service: "s", Account: "a"}}
			},
			key:  "env_from_host.TOK",
			msg:  "env_from_host.TOK: keychain_env.TOK sets the same variable",
			hint: "keep one of env_from_host.TOK and keychain_env.TOK",
		},
		{
			name: "reserved name in env",
			mod:  func(in *Input) { in.Settings.Env = map[string]string{"CORRAL_BOX": "other"} },
			key:  "env.CORRAL_BOX",
			msg:  "env.CORRAL_BOX: variable names starting with CORRAL_ are reserved for corral",
			hint: "rename the variable in the config",
		},
		{
			name: "reserved name in forward_env",
			mod:  func(in *Input) { in.Settings.ForwardEnv = []string{"CORRAL_FWD_X"} },
			key:  "forward_env",
			msg:  "forward_env: variable names starting with CORRAL_ are reserved for corral",
			hint: "rename the variable in the config",
		},
		{
			name: "bad name",
			mod: func(in *Input) {
				in.Settings.KeychainEnv = map[string]config.SecretRef{"A-B": {Service: "s", Account: "a"}}
			},
			key: "keychain_env.A-B",
			msg: `keychain_env.A-B: "A-B" is not a variable name`,
		},
		{
			name: "NUL in a value",
			mod: func(in *Input) {
				in.Settings.EnvFromHost = map[string]string{"A": "HOST_A"}
				in.Getenv = hostEnv("HOST_A", leak+"\x00")
			},
			key: "env_from_host.A",
			msg: "env_from_host.A: value contains a NUL byte",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			in.Getenv = hostEnv("KEY_ON_HOST", leak)
			tt.mod(&in)
			e := refused(t, in, tt.key)
			if e.Error() != tt.msg {
				t.Errorf("message %q\n want %q", e.Error(), tt.msg)
			}
			if e.Hint() != tt.hint {
				t.Errorf("hint %q\n want %q", e.Hint(), tt.hint)
			}
			if tt.matches != nil && !errors.Is(e, tt.matches) {
				t.Errorf("%v does not match %v", e, tt.matches)
			}
			if strings.Contains(e.Error(), leak) || strings.Contains(e.Hint(), leak) {
				t.Errorf("value leaked: %v", e)
			}
		})
	}
}

func TestAllProblemsAtOnce(t *testing.T) {
	in := base()
	in.Settings.EnvFromHost = map[string]string{"A": "HOST_A", "B": "HOST_B"}
	in.Settings.KeychainEnv = map[string]config.SecretRef{"K": {Service: "s", Account: "a"}}
	in.Settings.GitTokens = []string{"github.com"}
	_, err := Assemble(context.Background(), in)
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 4 {
		t.Errorf("%d errors, want 4: %v", n, err)
	}
}

// An unavailable keychain is asked once, not once per item.
func TestUnavailableStoreAskedOnce(t *testing.T) {
	store := &countingStore{Store: &secret.Memory{Unavailable: true}}
	in := base()
	in.Secrets = store
	in.Settings.KeychainEnv = map[string]config.SecretRef{
		"A": {Service: "s", Account: "a"}, "B": {Service: "s", Account: "b"}, "C": {Service: "s", Account: "c"},
	}
	_, err := Assemble(context.Background(), in)
	if store.gets != 1 {
		t.Errorf("%d Get calls, want 1", store.gets)
	}
	if !strings.Contains(err.Error(), `keychain_env.C: not read: service "s" account "c": secret store unavailable`) {
		t.Errorf("error: %v", err)
	}
}

type countingStore struct {
	secret.Store
	gets int
}

func (c *countingStore) Get(ctx context.Context, s, a string) (string, error) {
	c.gets++
	return c.Store.Get(ctx, s, a)
}

func TestRedaction(t *testing.T) {
	const val = "sk-very-secret"
	in := base()
	in.Settings.Env = map[string]string{"API_KEY": val}
	env := mustAssemble(t, in)
	v, _ := env.Lookup("API_KEY")
	for _, s := range []string{
		fmt.Sprint(env), fmt.Sprintf("%v %+v %#v %s %q %x", env, env, env, env, env, env),
		fmt.Sprint(v), fmt.Sprintf("%v %+v %#v %s %q", v, v, v, v, v),
		fmt.Sprintf("%v %+v %#v", env.Vars(), env.Vars(), env.Vars()),
		fmt.Sprintf("%+v", struct{ E Env }{env}), env.String(), env.GoString(), v.String(), v.GoString(),
	} {
		if strings.Contains(s, val) {
			t.Errorf("value in %q", s)
		}
	}
	if got, want := fmt.Sprint(env), "[API_KEY (env) CORRAL_BOX (box) CORRAL_PROJECT (box)]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	var b strings.Builder
	slog.New(slog.NewTextHandler(&b, nil)).Info("session", "env", env, "var", v)
	if strings.Contains(b.String(), val) || !strings.Contains(b.String(), "API_KEY") {
		t.Errorf("slog: %s", b.String())
	}
}

func TestEnviron(t *testing.T) {
	env := mustAssemble(t, base())
	got := env.Environ([]string{"PATH=/bin", "CORRAL_FWD_STALE=x", "HOME=/h"})
	want := []string{"PATH=/bin", "HOME=/h", "CORRAL_FWD_CORRAL_BOX=web-3f2a1c", "CORRAL_FWD_CORRAL_PROJECT=/home/dev/src/web"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Environ = %q", got)
	}
	if SendEnvOption != "SendEnv=CORRAL_FWD_*" {
		t.Error(SendEnvOption)
	}
}

func TestTokenVar(t *testing.T) {
	for host, want := range map[string]string{
		"github.com":             "CORRAL_GIT_TOKEN_GITHUB_COM",
		"git.example.test:8443":  "CORRAL_GIT_TOKEN_GIT_EXAMPLE_TEST_8443",
		"gitlab-ci.example.test": "CORRAL_GIT_TOKEN_GITLAB_CI_EXAMPLE_TEST",
	} {
		if got := TokenVar(host); got != want {
			t.Errorf("TokenVar(%q) = %q, want %q", host, got, want)
		}
	}
}

// fakeRun answers gh and glab from a table; missing commands are not installed.
type fakeRun struct {
	out   map[string]string
	calls []string
}

func (f *fakeRun) run(_ context.Context, dir, name string, args ...string) ([]byte, error) {
	call := strings.TrimSpace(dir + " " + name + " " + strings.Join(args, " "))
	f.calls = append(f.calls, call)
	if v, ok := f.out[call]; ok {
		if v == "exit1" {
			return nil, exitErr(1)
		}
		if v == "exit128" {
			return nil, exitErr(128)
		}
		return []byte(v), nil
	}
	return nil, fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

// exitErr makes a real *exec.ExitError with the given status.
func exitErr(code int) error {
	err := exec.Command("sh", "-c", fmt.Sprintf("exit %d", code)).Run()
	return err
}

func TestHostGitTokens(t *testing.T) {
	ctx := context.Background()
	store := &secret.Memory{}
	_ = store.Set(ctx, GitTokenService, "github.com", "kc-token")
	f := &fakeRun{out: map[string]string{
		"gh auth token --hostname github.com":              "gh-token\n",
		"gh auth token --hostname ghe.example.test":        "ghe-token\n",
		"gh auth token --hostname gitlab.example.test":     "exit1",
		"glab config get token --host gitlab.example.test": "glab-token\n",
	}}
	h := HostGitTokens{Store: store, Run: f.run}
	for host, want := range map[string][2]string{
		"github.com":          {"kc-token", `keychain service "corral-git" account "github.com"`},
		"ghe.example.test":    {"ghe-token", "gh"},
		"gitlab.example.test": {"glab-token", "glab"},
	} {
		v, from, err := h.Token(ctx, host)
		if err != nil || v != want[0] || from != want[1] {
			t.Errorf("Token(%q) = %q, %q, %v; want %q", host, v, from, err, want)
		}
	}
	_, _, err := h.Token(ctx, "none.example.test")
	if err == nil || err.Error() != `no token for host "none.example.test" in the keychain (service "corral-git" account "none.example.test"), gh or glab` {
		t.Errorf("missing: %v", err)
	}
	// An unusable keychain falls through to gh, and is named when nothing is found.
	h.Store = &secret.Memory{Unavailable: true}
	if v, _, err := h.Token(ctx, "github.com"); err != nil || v != "gh-token" {
		t.Errorf("gh fallback: %q %v", v, err)
	}
	if _, _, err := h.Token(ctx, "none.example.test"); !errors.Is(err, secret.ErrUnavailable) {
		t.Errorf("unavailable not reported: %v", err)
	}
}

func TestGitConfig(t *testing.T) {
	ctx := context.Background()
	f := &fakeRun{out: map[string]string{
		"/p git config --get user.name":  "Dev Example\n",
		"/p git config --get user.email": "exit1",
		"/q git config --get user.name":  "exit128", // e.g. dubious ownership
		"git config --get user.name":     "Global Name\n",
	}}
	for _, c := range []struct{ dir, key, want string }{
		{"/p", "user.name", "Dev Example"},
		{"/p", "user.email", ""},
		{"/q", "user.name", "Global Name"},
		{"/r", "user.signingkey", ""}, // git not installed
	} {
		got, err := gitConfig(f.run, c.dir)(ctx, c.key)
		if err != nil || got != c.want {
			t.Errorf("%s %s = %q, %v; want %q", c.dir, c.key, got, err, c.want)
		}
	}
}

// TestHostGitConfigReal reads a real repository's identity with git.
func TestHostGitConfigReal(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "repo@example.test"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	read := HostGitConfig(dir)
	if v, err := read(context.Background(), "user.email"); err != nil || v != "repo@example.test" {
		t.Errorf("user.email = %q, %v", v, err)
	}
	if v, err := read(context.Background(), "user.name"); err != nil || v != "" {
		t.Errorf("user.name = %q, %v", v, err)
	}
}

// TestAgentStage: a gemini session trusts its working directory for
// Gemini CLI (agent.GeminiTrustVar, stage 9), other agents' sessions do
// not, and any other stage naming the variable wins (a user who wants
// Gemini CLI's trust prompt back sets it in env or forwards it).
func TestAgentStage(t *testing.T) {
	gemini, _ := agent.Find(nil, "gemini")
	claude, _ := agent.Find(nil, "claude")
	for _, tt := range []struct {
		name  string
		agent agent.Agent
		cfg   config.Settings
		host  []string
		want  string // "" = unset; else "stage=value"
	}{
		{name: "gemini", agent: gemini, want: "agent=true"},
		{name: "claude", agent: claude},
		{name: "env wins", agent: gemini, cfg: config.Settings{Env: map[string]string{agent.GeminiTrustVar: "false"}}, want: "env=false"},
		{name: "forward_env wins", agent: gemini, cfg: config.Settings{ForwardEnv: []string{agent.GeminiTrustVar}},
			host: []string{agent.GeminiTrustVar, "false"}, want: "passthrough=false"},
		{name: "forward_env of an unset variable", agent: gemini, cfg: config.Settings{ForwardEnv: []string{agent.GeminiTrustVar}}, want: "agent=true"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			in.Agent, in.Settings = tt.agent, tt.cfg
			in.Getenv = hostEnv(tt.host...)
			got := sources(mustAssemble(t, in))[agent.GeminiTrustVar]
			if got != tt.want {
				t.Errorf("%s = %q, want %q", agent.GeminiTrustVar, got, tt.want)
			}
		})
	}
}
