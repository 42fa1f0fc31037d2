package credential

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/secret"
)

func ptr[T any](v T) *T { return &v }

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(n string) (string, bool) { v, ok := m[n]; return v, ok }
}

// The plan depends on the config alone: a box holds its agent's key and
// its configured credentials, and nothing of another agent.
func TestPlanPerAgent(t *testing.T) {
	for _, tc := range []struct {
		agent, want string
		withheld    []string
	}{
		{"", "anthropic", []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
		{"claude", "anthropic", []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
		{"codex", "openai", []string{"OPENAI_API_KEY"}},
		{"gemini", "gemini", []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}},
		{"shell", "", nil},
	} {
		c := config.Config{Network: ptr(config.NetworkBroker), AgentCreds: ptr(config.AgentCredsBrokered)}
		if tc.agent != "" {
			c.Agent = ptr(tc.agent)
		}
		specs := Plan(settings(c))
		var names []string
		var withheld []string
		for _, s := range specs {
			names = append(names, s.Name)
			withheld = append(withheld, s.Withholds...)
		}
		if strings.Join(names, ",") != tc.want || !slices.Equal(withheld, tc.withheld) {
			t.Errorf("agent %q: plan %v withholds %v, want %q %v", tc.agent, names, withheld, tc.want, tc.withheld)
		}
	}
	for _, c := range []config.Config{
		{Network: ptr(config.NetworkBroker), AgentCreds: ptr(config.AgentCredsForwarded)},
		{Network: ptr(config.NetworkFull)},
	} {
		if specs := Plan(settings(c)); len(specs) != 0 {
			t.Errorf("%+v: plan %+v", c, specs)
		}
	}
}

// Another agent's key configured under its name in a claude box is that
// agent's key: every session gets the agent's base URL variable and a
// placeholder in its key variable, and the variables are withheld (so
// `corral codex` and `corral gemini` in a claude box use the broker).
func TestConfiguredAgentKeysInAClaudeBox(t *testing.T) {
	c := config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("claude"), Credentials: map[string]config.Credential{
		"openai": {Upstream: "https://127.0.0.1:8443/v1", Header: "authorization", EnvFromHost: "E2E_OPENAI_KEY"},
		"gemini": {Upstream: "https://127.0.0.1:8444", Header: "x-goog-api-key", EnvFromHost: "E2E_GEMINI_KEY"},
	}}
	specs := Plan(settings(c))
	h, err := NewHolder(specs, HolderConfig{Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	if w := h.Wants(); !slices.Equal(w, []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "E2E_GEMINI_KEY", "E2E_OPENAI_KEY"}) {
		t.Errorf("wants %v", w)
	}
	s, err := h.Answer("s1", map[string]string{"E2E_OPENAI_KEY": "sk-o", "E2E_GEMINI_KEY": "g-k"})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range s.SessionVars("http://b") {
		vars[v.Name] = v.Value
	}
	want := map[string]string{
		"OPENAI_BASE_URL": "http://b/corral/credential/" + s.Token + "/openai", "OPENAI_API_KEY": Placeholder,
		"GOOGLE_GEMINI_BASE_URL": "http://b/corral/credential/" + s.Token + "/gemini", "GEMINI_API_KEY": Placeholder,
	}
	for k, v := range want {
		if vars[k] != v {
			t.Errorf("%s = %q, want %q", k, vars[k], v)
		}
	}
	if len(vars) != len(want) {
		t.Errorf("session vars %v", vars)
	}
	if w := s.Withheld(); !slices.Equal(w, []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY"}) {
		t.Errorf("withheld %v", w)
	}
}

// The implicit key's sources follow launchenv's stage order per variable.
func TestPlanSources(t *testing.T) {
	c := config.Config{Network: ptr(config.NetworkBroker),
		EnvFromHost: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "MY_TOKEN"},
		KeychainEnv: map[string]config.SecretRef{"ANTHROPIC_API_KEY": {Service: "s", Account: "a"}}}
	specs := Plan(settings(c))
	if len(specs) != 1 || len(specs[0].Sources) != 2 {
		t.Fatalf("plan %+v", specs)
	}
	api, oauth := specs[0].Sources[0], specs[0].Sources[1]
	if api.Var != "ANTHROPIC_API_KEY" || api.HostVar != "ANTHROPIC_API_KEY" || api.Keychain == nil || api.Header != egress.HeaderAPIKey {
		t.Errorf("api key source %+v", api)
	}
	if oauth.HostVar != "MY_TOKEN" || oauth.Keychain != nil || oauth.Header != egress.HeaderAuthorization {
		t.Errorf("oauth source %+v", oauth)
	}
}

const tok = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestSessionVars(t *testing.T) {
	s := Served{Token: tok, Routes: []Route{
		{Name: "anthropic", Upstream: "https://api.example.test", BaseURLVar: "ANTHROPIC_BASE_URL", Var: "CLAUDE_CODE_OAUTH_TOKEN",
			Withholds: []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}},
		{Name: "github", Upstream: "https://git.example.test/"},
	}}
	got := map[string]string{}
	for _, v := range s.SessionVars("http://192.168.5.4:4242") {
		got[v.Name] = v.Value
	}
	base := "http://192.168.5.4:4242/corral/credential/" + tok
	want := map[string]string{
		"ANTHROPIC_BASE_URL":      base + "/anthropic",
		"CLAUDE_CODE_OAUTH_TOKEN": Placeholder,
		"GIT_CONFIG_KEY_0":        "url." + base + "/github/.insteadOf",
		"GIT_CONFIG_VALUE_0":      "https://git.example.test/",
		"GIT_CONFIG_COUNT":        "1",
	}
	if len(got) != len(want) {
		t.Errorf("vars %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if err := s.check(); err != nil {
		t.Error(err)
	}
	if !slices.Equal(s.Withheld(), []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"}) {
		t.Errorf("withheld %v", s.Withheld())
	}
	for _, bad := range []Served{
		{Token: "short", Routes: s.Routes},
		{Token: strings.ToUpper(tok), Routes: s.Routes},
		{Token: tok, Routes: []Route{{Name: "Bad/Name", Upstream: "https://x.test"}}},
		{Token: tok, Routes: []Route{{Name: "a", Upstream: "http://x.test"}}},
		{Token: tok, Routes: []Route{{Name: "a", Upstream: "https://x.test", BaseURLVar: "X;rm", Var: "Y"}}},
	} {
		if bad.check() == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	if err := Check(settings(config.Config{Network: ptr(config.NetworkFull), Credentials: map[string]config.Credential{"a": {}}})); err == nil {
		t.Error("credentials accepted outside broker mode")
	}
}

// A holder serves what the broker can read itself, waits for the rest, and
// starts serving a key a session supplies over the control socket; the
// session's answer then names it, with a token that opens its route.
func TestHolderAndControl(t *testing.T) {
	var gotKey string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("Authorization")
	}))
	defer up.Close()
	pool := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex"), Credentials: map[string]config.Credential{
		"git": {Upstream: "https://git.example.test", Header: "basic", EnvFromHost: "GIT_TOK"},
	}}
	h, err := NewHolder(Plan(settings(c)), HolderConfig{Getenv: env("GIT_TOK", "g"), Store: &secret.Memory{},
		Upstreams: map[string]string{OpenAI: up.URL + "/v1"}, RootCAs: map[string]*x509Pool{OpenAI: pool},
		Egress: egress.CredentialConfig{Resolver: nil}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Served(), []string{"git"}) || !slices.Equal(h.Wants(), []string{"OPENAI_API_KEY"}) {
		t.Fatalf("served %v wants %v", h.Served(), h.Wants())
	}
	sock := serveControl(t, h)
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket %v %v", fi, err)
	}

	// A session without the key gets the git route only.
	s1, err := Ask(context.Background(), sock, "s1", env())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s1.Names(), []string{"git"}) || len(s1.Token) != egress.TokenLen {
		t.Fatalf("served %+v", s1)
	}
	// A session with it supplies it; from then on the broker serves it.
	s2, err := Ask(context.Background(), sock, "s2", env("OPENAI_API_KEY", "sk-session"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s2.Names(), []string{"git", "openai"}) || s2.Token == s1.Token {
		t.Fatalf("served %+v", s2)
	}
	vars := map[string]string{}
	for _, v := range s2.SessionVars("http://b") {
		vars[v.Name] = v.Value
	}
	if vars["OPENAI_BASE_URL"] != "http://b/corral/credential/"+s2.Token+"/openai" || vars["OPENAI_API_KEY"] != Placeholder {
		t.Errorf("vars %v", vars)
	}
	if !slices.Contains(s2.Withheld(), "OPENAI_API_KEY") || len(h.Wants()) != 0 {
		t.Errorf("withheld %v wants %v", s2.Withheld(), h.Wants())
	}
	// The route answers with the supplied key.
	p := startServer(t, h.Broker())
	resp, err := http.Post("http://"+p+"/corral/credential/"+s2.Token+"/openai/responses", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || gotKey != "Bearer sk-session" {
		t.Errorf("status %d key %q", resp.StatusCode, gotKey)
	}
	// Bad requests are refused with an error, and the socket keeps serving.
	if _, err := h.Answer("Bad Session", nil); err == nil {
		t.Error("a malformed session id was accepted")
	}
	if _, err := h.Answer("s3", map[string]string{"OPENAI_API_KEY": "a\nb"}); err != nil {
		t.Errorf("a supply for a credential already served is ignored: %v", err)
	}
}

// TestKeychainRefsForPreflight: the broker tells sessions which keychain
// items it reads (refs, never values), through the control socket, so a
// session at a terminal can read them first; an item whose host variable
// the broker has is not read, so not listed.
func TestKeychainRefsForPreflight(t *testing.T) {
	c := config.Config{Network: ptr(config.NetworkBroker),
		KeychainEnv: map[string]config.SecretRef{"ANTHROPIC_API_KEY": {Service: "corral", Account: "anthropic"}}}
	for _, tt := range []struct {
		name string
		env  func(string) (string, bool)
		want []secret.Ref
	}{
		{"from the keychain", env(), []secret.Ref{{Service: "corral", Account: "anthropic"}}},
		{"from the broker's environment", env("ANTHROPIC_API_KEY", "sk-env"), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewHolder(Plan(settings(c)), HolderConfig{Getenv: tt.env, Store: &secret.Memory{}})
			if err != nil {
				t.Fatal(err)
			}
			sock := serveControl(t, h)
			s, err := Ask(context.Background(), sock, "s1", env())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Keychain, tt.want) {
				t.Errorf("keychain refs %+v, want %+v", s.Keychain, tt.want)
			}
		})
	}
	if err := (Served{Keychain: []secret.Ref{{Service: "a\nb"}}}).check(); err == nil {
		t.Error("a keychain ref with a line break passed the check")
	}
}

// serveControl serves h's control socket until the test ends and returns
// its path.
func serveControl(t *testing.T, h *Holder) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "b.ctl")
	ctl, err := ListenControl(sock, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ctl.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return sock
}

// settings is the effective settings of one hand-written config.
func settings(c config.Config) config.Settings { return config.Effective{Config: c}.Settings() }
