package credential

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/secret"
)

// The laptop's relay: a private socket (0600 in a 0700 directory of its
// own), served only for the credentials this machine can read, its token
// opening them with the key injected here; Close removes it all.
func TestStartRelay(t *testing.T) {
	var got http.Header
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		io.WriteString(w, "ok")
	}))
	defer up.Close()
	pool := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex"), Credentials: map[string]config.Credential{
		"git":    {Upstream: "https://git.example.test", Header: "basic", Keychain: &config.SecretRef{Service: "corral", Account: "git"}, ReadOnly: true},
		"absent": {Upstream: "https://x.example.test", Header: "basic", EnvFromHost: "NOT_HERE"},
	}}
	run, err := os.MkdirTemp("", "rr")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	store := &secret.Memory{}
	store.Set(context.Background(), "corral", "git", "ghp_laptop")
	r, err := StartRelay(filepath.Join(run, "run"), "sess-1", settings(c), Grant{Host: "gpu", Credentials: []string{"git", "openai", "absent"}}, HolderConfig{Store: store, Getenv: env("OPENAI_API_KEY", "sk-laptop"),
		Upstreams: map[string]string{"git": up.URL}, RootCAs: map[string]*x509Pool{"git": pool},
		Egress: egress.CredentialConfig{Resolver: loopbackResolver{}}})
	if err != nil {
		t.Fatal(err)
	}
	if names := (Served{Routes: r.Routes}).Names(); strings.Join(names, ",") != "git,openai" {
		t.Errorf("relay serves %v, want git and openai (absent has no source here)", names)
	}
	fi, err := os.Stat(r.Socket)
	di, derr := os.Stat(filepath.Dir(r.Socket))
	if err != nil || derr != nil || fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Fatalf("socket %v %v, dir %v %v", fi, err, di, derr)
	}
	cl := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.Socket)
	}}}
	get := func(tok, rest string) int {
		resp, err := cl.Get("http://" + egress.RelayHost + egress.CredentialPrefix + tok + "/git" + rest)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(r.Token, "/o/r.git/info/refs?service=git-upload-pack"); s != 200 || !strings.HasPrefix(got.Get("Authorization"), "Basic ") {
		t.Errorf("fetch: %d, upstream got %v", s, got)
	}
	if s := get(r.Token, "/o/r.git/info/refs?service=git-receive-pack"); s != 403 {
		t.Errorf("push discovery through a read_only credential: %d", s)
	}
	if s := get(strings.Repeat("0", 64), "/o/r.git/info/refs"); s != 403 {
		t.Errorf("another token: %d", s)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(r.Socket)); !os.IsNotExist(err) {
		t.Errorf("the relay's directory is still there: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	// Nothing this machine can read: no relay.
	none, err := StartRelay(filepath.Join(run, "run"), "sess-2", settings(config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex")}),
		Grant{Host: "gpu", Credentials: []string{"openai"}}, HolderConfig{Getenv: env(), Store: &secret.Memory{}})
	if err != nil || none != nil {
		t.Errorf("StartRelay with nothing to serve = %v, %v", none, err)
	}
}

// The relay names its hosts (issue 35): a host uses only the credentials
// its grant names. One it was not granted that this machine holds is
// refused (403, not-granted) with the command that grants it, and Asked
// is called once; one this machine does not hold is unknown (404). With
// no grant the relay still answers, refusing each with its command.
func TestRelayGrantsPerHost(t *testing.T) {
	var got []string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
	}))
	defer up.Close()
	pool := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := settings(config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex"), Credentials: map[string]config.Credential{
		"git": {Upstream: "https://git.example.test", Header: "basic", EnvFromHost: "GIT_TOK"},
	}})
	run, err := os.MkdirTemp("", "rg")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(run)
	start := func(grant []string, asked *[]string) *Relay {
		t.Helper()
		r, err := StartRelay(filepath.Join(run, "run"), "sess", c, Grant{Host: "gpu", Credentials: grant,
			Hint:  func(name string) string { return "corral host grant gpu " + name },
			Asked: func(name string) { *asked = append(*asked, name) }},
			HolderConfig{Getenv: env("GIT_TOK", "ghp_x", "OPENAI_API_KEY", "sk-laptop"),
				Upstreams: map[string]string{"git": up.URL, OpenAI: up.URL + "/v1"}, RootCAs: map[string]*x509Pool{"git": pool, OpenAI: pool},
				Egress: egress.CredentialConfig{Resolver: loopbackResolver{}}})
		if err != nil || r == nil {
			t.Fatal(r, err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	do := func(r *Relay, tok, name string) (int, string) {
		t.Helper()
		cl := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", r.Socket)
		}}}
		resp, err := cl.Get("http://" + egress.RelayHost + egress.CredentialPrefix + tok + "/" + name + "/x")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	var asked []string
	r := start([]string{"git"}, &asked)
	if names := (Served{Routes: r.Routes}).Names(); strings.Join(names, ",") != "git" || strings.Join(r.Withheld, ",") != "openai" {
		t.Errorf("serves %v, withholds %v; want git, and openai withheld", names, r.Withheld)
	}
	if s, _ := do(r, r.Token, "git"); s != 200 {
		t.Errorf("granted git: %d", s)
	}
	for range 2 {
		if s, body := do(r, r.Token, OpenAI); s != 403 || !strings.Contains(body, "corral host grant gpu openai") {
			t.Errorf("openai, not granted: %d %q", s, body)
		}
	}
	if s, _ := do(r, strings.Repeat("0", 64), OpenAI); s != 403 {
		t.Errorf("another token: %d", s)
	}
	if s, _ := do(r, r.Token, "gemini"); s != 404 {
		t.Errorf("a credential not held here: %d", s)
	}
	if strings.Join(asked, ",") != "openai" {
		t.Errorf("asked %v, want openai once", asked)
	}
	if strings.Join(got, ",") != "/x" {
		t.Errorf("the upstream got %v, want the one granted request", got)
	}

	// No grant (the default): the relay answers, and refuses each.
	asked = nil
	none := start(nil, &asked)
	if len(none.Routes) != 0 || strings.Join(none.Withheld, ",") != "git,openai" {
		t.Errorf("no grant: serves %v, withholds %v", none.Routes, none.Withheld)
	}
	if s, body := do(none, none.Token, "git"); s != 403 || !strings.Contains(body, "corral host grant gpu git") {
		t.Errorf("git, not granted: %d %q", s, body)
	}
	if len(got) != 1 {
		t.Errorf("the upstream got %v", got)
	}
}

// forwardSocket plays ssh's -R: it listens on remote and copies each
// connection to local.
func forwardSocket(t *testing.T, remote, local string) {
	t.Helper()
	ln, err := net.Listen("unix", remote)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				l, err := net.Dial("unix", local)
				if err != nil {
					return
				}
				defer l.Close()
				go io.Copy(l, c)
				io.Copy(c, l)
			}()
		}
	}()
}

// The whole relay across two holders: the laptop's relay holds the key;
// the remote broker cannot read it, so a session that brings the relay
// over its control socket gets the route, served through the relay, and
// the upstream sees the laptop's key; a session without the relay is
// refused; a relay socket outside the run directory, or not a socket, is
// refused.
func TestRelayedSession(t *testing.T) {
	var gotKey string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("Authorization")
	}))
	defer up.Close()
	pool := up.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	codex := config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex")}
	tmp, err := os.MkdirTemp("", "rs")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	laptop, err := StartRelay(filepath.Join(tmp, "l"), "lap-1", settings(codex), Grant{Host: "gpu", Credentials: []string{OpenAI}}, HolderConfig{Getenv: env("OPENAI_API_KEY", "sk-laptop"),
		Upstreams: map[string]string{OpenAI: up.URL + "/v1"}, RootCAs: map[string]*x509Pool{OpenAI: pool},
		Egress: egress.CredentialConfig{Resolver: loopbackResolver{}}})
	if err != nil || laptop == nil {
		t.Fatal(laptop, err)
	}
	defer laptop.Close()

	runDir := filepath.Join(tmp, "r")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	remoteSock := filepath.Join(runDir, "relay-0123456789abcdef.sock")
	forwardSocket(t, remoteSock, laptop.Socket)
	// The remote host has no key; its upstream is the same test server.
	h, err := NewHolder(Plan(settings(codex)), HolderConfig{Getenv: env(), Store: &secret.Memory{}, RelayDir: runDir,
		Upstreams: map[string]string{OpenAI: up.URL + "/v1"}, Egress: egress.CredentialConfig{Resolver: loopbackResolver{}}})
	if err != nil {
		t.Fatal(err)
	}
	ctl := serveControl(t, h)
	bad := []egress.Relay{
		{Socket: filepath.Join(tmp, "relay-0123456789abcdef.sock"), Token: laptop.Token},    // outside the run directory
		{Socket: filepath.Join(runDir, "relay-ffffffffffffffff.sock"), Token: laptop.Token}, // nothing there
		{Socket: filepath.Join(runDir, "other.sock"), Token: laptop.Token},
		{Socket: remoteSock, Token: "nope"},
	}
	os.WriteFile(filepath.Join(runDir, "relay-eeeeeeeeeeeeeeee.sock"), nil, 0o600) // a file, not a socket
	bad = append(bad, egress.Relay{Socket: filepath.Join(runDir, "relay-eeeeeeeeeeeeeeee.sock"), Token: laptop.Token})
	for _, r := range bad {
		if _, err := AskRelayed(context.Background(), ctl, "sx", env(), &r); err == nil {
			t.Errorf("relay %+v accepted", r)
		}
	}
	if len(h.Served()) != 0 {
		t.Fatalf("a refused relay served %v", h.Served())
	}

	s1, err := AskRelayed(context.Background(), ctl, "s1", env(), &egress.Relay{Socket: remoteSock, Token: laptop.Token})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s1.Names(), ",") != "openai" || !strings.Contains(strings.Join(s1.Withheld(), ","), "OPENAI_API_KEY") {
		t.Fatalf("served %+v", s1)
	}
	p := startServer(t, h.Broker())
	post := func(tok string) int {
		resp, err := http.Post("http://"+p+"/corral/credential/"+tok+"/openai/responses", "text/plain", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := post(s1.Token); s != 200 || gotKey != "Bearer sk-laptop" {
		t.Errorf("relayed: %d, upstream key %q", s, gotKey)
	}
	// Another session of the box without a relay: the route is listed, and
	// refused.
	gotKey = ""
	s2, err := Ask(context.Background(), ctl, "s2", env())
	if err != nil {
		t.Fatal(err)
	}
	if s := post(s2.Token); s != 502 || gotKey != "" {
		t.Errorf("no relay: %d, upstream key %q", s, gotKey)
	}
	// The laptop's session ends: its relay is gone, the route fails closed.
	laptop.Close()
	if s := post(s1.Token); s != 502 || gotKey != "" {
		t.Errorf("after the laptop left: %d, upstream key %q", s, gotKey)
	}
}

// RemoveRelaySocket removes only what the broker would dial: a socket of
// this user named as ssh's forward is named, directly in the run
// directory; a file, a link, another name or another directory stays.
func TestRemoveRelaySocket(t *testing.T) {
	tmp, err := os.MkdirTemp("", "rr") // short: sun_path
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	runDir := filepath.Join(tmp, "run")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	listen := func(p string) {
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		l.Close()
	}
	sock := filepath.Join(runDir, "relay-0123456789abcdef.sock")
	listen(sock)
	if err := RemoveRelaySocket(runDir, sock); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("the relay socket is still there: %v", err)
	}
	if err := RemoveRelaySocket(runDir, sock); err != nil {
		t.Errorf("a socket already gone: %v", err)
	}
	other := filepath.Join(runDir, "other.sock")
	listen(other)
	outside := filepath.Join(tmp, "relay-0123456789abcdef.sock")
	listen(outside)
	file := filepath.Join(runDir, "relay-eeeeeeeeeeeeeeee.sock")
	os.WriteFile(file, []byte("keep"), 0o600)
	link := filepath.Join(runDir, "relay-dddddddddddddddd.sock")
	os.Symlink(outside, link)
	for _, p := range []string{other, outside, file, link, runDir + "/../run/relay-0123456789abcdef.sock"} {
		if err := RemoveRelaySocket(runDir, p); err == nil {
			t.Errorf("%s: removed without an error", p)
		}
	}
	for _, p := range []string{other, outside, file, link} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
}
