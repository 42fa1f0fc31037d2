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
	r, err := StartRelay(filepath.Join(run, "run"), "sess-1", c, HolderConfig{Store: store, Getenv: env("OPENAI_API_KEY", "sk-laptop"),
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
	none, err := StartRelay(filepath.Join(run, "run"), "sess-2", config.Config{Network: ptr(config.NetworkBroker), Agent: ptr("codex")},
		HolderConfig{Getenv: env(), Store: &secret.Memory{}})
	if err != nil || none != nil {
		t.Errorf("StartRelay with nothing to serve = %v, %v", none, err)
	}
}
