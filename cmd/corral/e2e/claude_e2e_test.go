//go:build e2e

package e2e

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/funnel"
)

// testCA is a throwaway CA and a leaf for 127.0.0.1, for upstreams the
// broker must verify (it is given the CA through [credentials.NAME].ca,
// never by turning verification off).
type testCA struct {
	pemPath string
	leaf    tls.Certificate
}

func newTestCA(t *testing.T, dir string) *testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "corral e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	must(t, err)
	caCert, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	must(t, err)
	ca := &testCA{pemPath: filepath.Join(dir, "e2e-ca.pem"),
		leaf: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
	must(t, os.WriteFile(ca.pemPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644))
	return ca
}

// serveTLS serves h over TLS with the CA's leaf on host loopback and
// returns the port.
func (ca *testCA) serveTLS(t *testing.T, h http.Handler) string {
	t.Helper()
	ln := brokertest.ListenOutsideBrokerPorts(t)
	srv := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{ca.leaf}}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// fakeAnthropic is a fake Messages API: POST /v1/messages answers with the
// streamed event sequence Claude Code accepts (docs: shared notes,
// "Measured here"); anything else gets an empty JSON object. It records
// every request's method, path and headers.
type fakeAnthropic struct {
	mu   sync.Mutex
	reqs []fakeReq
}

type fakeReq struct {
	Method, Path string
	Header       http.Header
}

const fakeAnswer = "Hello from the fake Messages API"

func (f *fakeAnthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	f.mu.Lock()
	f.reqs = append(f.reqs, fakeReq{r.Method, r.URL.Path, r.Header.Clone()})
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, "{}")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	ev := func(name string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		if fl != nil {
			fl.Flush()
		}
	}
	usage := map[string]int{"input_tokens": 5, "output_tokens": 7}
	ev("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_e2e", "type": "message", "role": "assistant", "model": "claude-e2e", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	ev("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
	ev("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": fakeAnswer}})
	ev("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	ev("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil}, "usage": usage})
	ev("message_stop", map[string]any{"type": "message_stop"})
}

func (f *fakeAnthropic) all() []fakeReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeReq(nil), f.reqs...)
}

// gitServer is git http-backend behind TLS on host loopback, serving one
// bare repository and requiring Basic auth with the token as password.
func gitServer(t *testing.T, ca *testCA, root, token string) string {
	t.Helper()
	gitBin, err := exec.LookPath("git")
	must(t, err)
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Dir: root,
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	return ca.serveTLS(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
}

func runGit(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=e2e", "GIT_AUTHOR_EMAIL=e2e@example.test",
		"GIT_COMMITTER_NAME=e2e", "GIT_COMMITTER_EMAIL=e2e@example.test")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// scanScript runs as root in the box and looks for every key (given
// hex-encoded and comma-separated, so that its own argv does not hold
// them) in every process's environment and argv and in every file outside
// /proc, /sys, /dev and the project mount, in one walk. It prints
// "HITS n" and the places, each with the index of the key found.
const scanScript = `import os, sys
keys = [bytes.fromhex(k) for k in sys.argv[1].split(",")]; skip = ("/proc", "/sys", "/dev", sys.argv[2])
longest = max(len(k) for k in keys)
hits = []
def find(b):
    return [i for i, k in enumerate(keys) if k in b]
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    for f in ("environ", "cmdline"):
        try:
            for i in find(open("/proc/%s/%s" % (pid, f), "rb").read()): hits.append("key %d: /proc/%s/%s" % (i, pid, f))
        except OSError: pass
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for n in files:
        p = os.path.join(top, n)
        try:
            if not os.path.isfile(p) or os.path.islink(p): continue
            found = set()
            with open(p, "rb") as fh:
                prev = b""
                while True:
                    b = fh.read(1 << 20)
                    if not b: break
                    found.update(find(prev + b))
                    prev = b[-longest:]
            for i in sorted(found): hits.append("key %d: %s" % (i, p))
        except OSError: pass
print("HITS", len(hits)); [print(h) for h in hits]
`

// claudeRoute is a credential route of TestClaudeBrokered's box, with the
// token its broker issued to one session (ANTHROPIC_BASE_URL as the guest
// sees it), set once that test has it: another box's test
// (otherBoxRefusesRoute) checks that its own broker refuses it.
var claudeRoute string

// routeRe is a brokered base URL as a session gets it.
var routeRe = regexp.MustCompile(`^http://[0-9.]+:[0-9]+/corral/credential/([0-9a-f]{64})/([a-z0-9_-]+)$`)

// keyVars are host variables that could hand a box's broker an agent key
// by another way than the test means: none is in `corral up`'s
// environment.
var keyVars = []string{"ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"}

func withoutKeys(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keyVars, name) && !strings.HasPrefix(name, "E2E_") {
			out = append(out, kv)
		}
	}
	return out
}

// TestClaudeBrokered runs the real Claude Code, Codex and Gemini CLI (from
// the pinned npm packages in the test image) in a broker-mode box whose
// API keys and git token only the broker holds, against fake model APIs
// and a fake git host on host loopback behind TLS with a test CA. The box
// starts from an environment without any key; the first session that has
// them hands them to the broker over its control socket. One VM; about 6
// to 10 minutes under TCG (boot, the sessions, a root scan of the guest,
// stop).
func TestClaudeBrokered(t *testing.T) {
	base := setup(t)
	proj := filepath.Join(filepath.Dir(base.project), "projc")
	must(t, os.MkdirAll(proj, 0o755))
	x := &h{t: t, bin: base.bin, home: base.home, project: proj, env: withoutKeys(base.env)}
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(x.ok("config", "show", "--json")), &cfg))
	x.box = cfg.Box

	rnd := make([]byte, 16)
	secretOf := func(prefix string) string {
		rand.Read(rnd)
		return prefix + hex.EncodeToString(rnd)
	}
	key := secretOf("sk-ant-e2e-")
	token := secretOf("ghp_e2e")
	openaiKey := secretOf("sk-proj-e2e-")
	geminiKey := secretOf("AIza-e2e-")
	secrets := map[string]string{"key": key, "token": token, "openai key": openaiKey, "gemini key": geminiKey}

	dir := t.TempDir()
	ca := newTestCA(t, dir)
	api := &fakeAnthropic{}
	apiPort := ca.serveTLS(t, api)
	oai, gem := &fakeOpenAI{}, &fakeGemini{}
	oaiPort, gemPort := ca.serveTLS(t, oai), ca.serveTLS(t, gem)
	gitRoot := filepath.Join(dir, "git")
	must(t, os.MkdirAll(gitRoot, 0o755))
	runGit(t, dir, "init", "-q", "--bare", "-b", "main", filepath.Join(gitRoot, "repo.git"))
	runGit(t, filepath.Join(gitRoot, "repo.git"), "config", "http.receivepack", "true")
	seed := filepath.Join(dir, "seed")
	runGit(t, dir, "clone", "-q", filepath.Join(gitRoot, "repo.git"), seed)
	runGit(t, seed, "commit", "-q", "--allow-empty", "-m", "seed")
	runGit(t, seed, "push", "-q", "origin", "HEAD:main")
	gitPort := gitServer(t, ca, gitRoot, token)
	// Another repository on the same git host, which the token could push
	// to, and the same host again on another port for a read-only
	// credential (credentialRulesRefuse).
	runGit(t, dir, "init", "-q", "--bare", "-b", "main", filepath.Join(gitRoot, "other.git"))
	runGit(t, filepath.Join(gitRoot, "other.git"), "config", "http.receivepack", "true")
	roPort := gitServer(t, ca, gitRoot, token)

	// The trusted layer: Claude's key and a git token as configured
	// credentials, and Codex's and Gemini's keys configured under their
	// agent key's names, so `corral codex` and `corral gemini` in this
	// claude box get their base URLs too (agentCredentials). The git
	// token has rules: gitfake reaches the one repository repo.git, gitro
	// (the same token on the same git host's second port) only fetches.
	trusted := fmt.Sprintf(`
[credentials.anthropic]
upstream = "https://127.0.0.1:%s"
header = "x-api-key"
env_from_host = "E2E_ANTHROPIC_KEY"
ca = %q

[credentials.gitfake]
upstream = "https://127.0.0.1:%s"
header = "basic"
env_from_host = "E2E_GIT_TOKEN"
ca = %q
paths = ["/repo.git"]

[credentials.gitro]
upstream = "https://127.0.0.1:%s"
header = "basic"
env_from_host = "E2E_GIT_TOKEN"
ca = %q
read_only = true
`, apiPort, ca.pemPath, gitPort, ca.pemPath, roPort, ca.pemPath)
	// Top-level keys first: agentCredentials starts with network and
	// agent, then its tables.
	trusted = "sudo = true\ngolden = false\n" + agentCredentials(oaiPort, gemPort, ca.pemPath) + trusted
	must(t, os.MkdirAll(filepath.Join(x.home, "projects"), 0o700))
	// While the laptop starts the box and its sessions, the box may reach
	// host loopback by name once allowed (the menu's Allow there is
	// proved with a host server); the local part runs without it.
	layer := filepath.Join(x.home, "projects", x.box+".toml")
	must(t, os.WriteFile(layer, []byte("egress = [\"127.0.0.0/8\"]\n"+trusted), 0o600))
	defer x.corral("rm", "-f")
	// The keys are only in the environment of the sessions that supply
	// them; ANTHROPIC_API_KEY is there too, to prove the session withholds
	// it.
	withKeys := []string{"E2E_ANTHROPIC_KEY=" + key, "E2E_GIT_TOKEN=" + token, "E2E_OPENAI_KEY=" + openaiKey,
		"E2E_GEMINI_KEY=" + geminiKey, "ANTHROPIC_API_KEY=" + key}
	// The project is a git repository (pull from the remote host brings
	// its box's commits back), and the box is made from the "laptop"
	// through corral --host (issue 30: remote_e2e_test.go), from an
	// environment without any key. Should that fail, the box is made here
	// so that the rest still runs.
	runGit(t, proj, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(proj, "README.txt"), []byte("claude's project\n"), 0o644))
	runGit(t, proj, "add", ".")
	runGit(t, proj, "commit", "-q", "-m", "first commit")
	remote := startRemoteHost(t, x)
	remote.laptopTrust(t, proj, fmt.Sprintf(`[credentials.anthropic]
upstream = "https://127.0.0.1:%s"
header = "x-api-key"
env_from_host = "E2E_ANTHROPIC_KEY"
ca = %q
`, apiPort, ca.pemPath))
	if out, errOut, code := remote.corral(t, nil, "", remote.on(proj, "up")...); code != 0 {
		t.Errorf("corral --host e2e up from the laptop: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		x.ok("up")
	}
	meta := x.meta(t)
	rulesRefused := false // the credential rules' subtest saw both refusals

	if _, _, code := x.corral("run", "--", "test", "-x", "/usr/local/bin/claude-real"); code != 0 {
		t.Fatalf("the test image has no Claude Code (/usr/local/bin/claude-real)\nhint: rebuild it with packaging/linux/build-image.sh (it installs the package pinned in core/pins/npm.txt)")
	}
	t.Run("a session gets no route while the broker lacks the key", func(t *testing.T) {
		x.t = t
		out, _, code := x.corral("run", "--", "printenv", "ANTHROPIC_BASE_URL")
		if code == 0 {
			t.Errorf("a session got ANTHROPIC_BASE_URL=%q before any session supplied the key", out)
		}
	})
	t.Run("on a remote host, from the laptop", func(t *testing.T) {
		x.t = t
		remoteSubtests(t, x, remote, api, key)
		x.t = t
	})
	// The laptop's first session made the key relayed for the broker's
	// lifetime; the local part wants a broker that waits for a key again
	// and the box's own config: the box is saved, then resumed with a new
	// broker.
	x.t = t
	must(t, os.WriteFile(layer, []byte(trusted), 0o600))
	x.ok("stop", "--save")
	x.ok("up")
	t.Run("claude -p answers through the broker with the key a session supplied", func(t *testing.T) {
		x.t = t
		out, errOut, code := x.corralEnv(withKeys, "claude", "--", "-p", "say hello")
		if code != 0 || !strings.Contains(out, fakeAnswer) {
			t.Fatalf("corral claude -p: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		if n := anthropicUses(t, api.all(), key); n == 0 {
			t.Error("the fake API never saw the real key on POST /v1/messages")
		}
	})
	t.Run("a later session without the key uses what the broker holds", func(t *testing.T) {
		x.t = t
		before := anthropicUses(t, api.all(), key)
		out, errOut, code := x.corral("claude", "--", "-p", "say hello")
		if code != 0 || !strings.Contains(out, fakeAnswer) {
			t.Fatalf("corral claude -p without the key: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		if anthropicUses(t, api.all(), key) <= before {
			t.Error("the fake API saw no new request with the real key")
		}
	})
	t.Run("corral claude in a terminal runs in a detachable session, attached again", func(t *testing.T) {
		x.t = t
		claudeDetached(t, x)
	})
	t.Run("time to the first answer byte", func(t *testing.T) {
		x.t = t
		benchOnly(t)
		// docs/BENCHMARKS.md: `corral claude -- -p "say hello"` on a running
		// box, from exec to the first byte on stdout (Claude Code prints the
		// answer once the stream ends, so this is the whole turn against
		// the fake API). 3 runs; about a minute under TCG.
		var ds []time.Duration
		for i := 0; i < 3; i++ {
			cmd := exec.Command(x.bin, "-C", x.project, "claude", "--", "-p", "say hello")
			cmd.Env = append([]string{}, x.env...)
			pr, pw, err := os.Pipe()
			must(t, err)
			cmd.Stdout = pw
			start := time.Now()
			must(t, cmd.Start())
			pw.Close()
			one := make([]byte, 1)
			if _, err := pr.Read(one); err != nil {
				t.Fatalf("no answer byte: %v", err)
			}
			ds = append(ds, time.Since(start))
			io.Copy(io.Discard, pr)
			pr.Close()
			must(t, cmd.Wait())
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		line := fmt.Sprintf("claude -p first answer byte on a running box (fake API, TCG): median %s, min %s, max %s over %d runs\n",
			ds[len(ds)/2].Round(time.Millisecond), ds[0].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond), len(ds))
		t.Log(line)
		benchOut(line)
	})
	t.Run("the session environment carries no secret", func(t *testing.T) {
		x.t = t
		got := x.ok("claude", "--", "--version") // the wrapper works
		if !strings.Contains(got, "Claude Code") {
			t.Errorf("claude --version = %q", got)
		}
		env := x.okEnv(withKeys, "run", "--", "env")
		for name, s := range secrets {
			if strings.Contains(env, s) {
				t.Errorf("the %s is in the session environment", name)
			}
		}
		vars := map[string]string{}
		for _, line := range strings.Split(env, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				vars[k] = v
			}
		}
		for baseVar, name := range map[string]string{"ANTHROPIC_BASE_URL": "anthropic", "OPENAI_BASE_URL": "openai", "GOOGLE_GEMINI_BASE_URL": "gemini"} {
			if m := routeRe.FindStringSubmatch(vars[baseVar]); m == nil || m[2] != name {
				t.Errorf("%s = %q, want the broker's %s route with a token", baseVar, vars[baseVar], name)
			}
		}
		for _, v := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"} {
			if vars[v] != "corral-brokered-placeholder" {
				t.Errorf("%s = %q, want the placeholder", v, vars[v])
			}
		}
		if !regexp.MustCompile(`/corral/credential/[0-9a-f]{64}/gitfake/\.insteadOf`).MatchString(env) {
			t.Errorf("no git insteadOf in the session environment:\n%s", env)
		}
	})
	t.Run("a box process's own credential headers are replaced; no token, a wrong one or a foreign Host is refused", func(t *testing.T) {
		x.t = t
		route := strings.TrimSpace(x.ok("run", "--", "printenv", "ANTHROPIC_BASE_URL"))
		m := routeRe.FindStringSubmatch(route)
		if m == nil || m[2] != "anthropic" {
			t.Fatalf("ANTHROPIC_BASE_URL = %q", route)
		}
		claudeRoute = route
		if otherRoute == "" {
			_, path, _ := strings.Cut(strings.TrimPrefix(route, "http://"), "/")
			otherRoute = "/" + path
		}
		curl := func(args ...string) string {
			return x.ok(append([]string{"run", "--", "curl", "-sS", "--noproxy", "*", "--max-time", "30"}, args...)...)
		}
		n := len(api.all())
		out := curl("-H", "x-api-key: box-fake", "-H", "Authorization: Bearer box-fake", route+"/v1/models")
		reqs := api.all()
		if len(reqs) != n+1 {
			t.Fatalf("the fake API got %d new requests (box said %q)", len(reqs)-n, out)
		}
		r := reqs[n]
		if r.Header.Get("X-Api-Key") != key || r.Header.Get("Authorization") != "" {
			t.Errorf("forwarded x-api-key real=%t, authorization %q", r.Header.Get("X-Api-Key") == key, r.Header.Get("Authorization"))
		}
		tok := m[1]
		wrong := []byte(tok) // one hex digit changed
		if wrong[10] == '0' {
			wrong[10] = '1'
		} else {
			wrong[10] = '0'
		}
		broker := strings.SplitN(route, "/corral/credential/", 2)[0]
		for _, tc := range []struct {
			name string
			args []string
		}{
			{"no token", []string{broker + "/corral/credential/anthropic/v1/models"}},
			{"a wrong token", []string{strings.Replace(route, tok, string(wrong), 1) + "/v1/models"}},
			{"a foreign Host", []string{"-H", "Host: evil.example.test", route + "/v1/models"}},
		} {
			n := len(api.all())
			status := curl(append([]string{"-o", "/dev/null", "-w", "%{http_code}", "-H", "x-api-key: box-fake"}, tc.args...)...)
			if status != "403" {
				t.Errorf("%s: status %q, want 403", tc.name, status)
			}
			if got := len(api.all()) - n; got != 0 {
				t.Errorf("%s: the fake API got %d requests", tc.name, got)
			}
		}
	})
	t.Run("git clone, commit and push through the broker", func(t *testing.T) {
		x.t = t
		script := fmt.Sprintf(`set -eu
rm -rf /tmp/r
git clone -q https://127.0.0.1:%s/repo.git /tmp/r
cd /tmp/r
git -c user.name=box -c user.email=box@example.test commit -q --allow-empty -m from-the-box
git push -q origin HEAD:main
echo PUSHED`, gitPort)
		out, errOut, code := x.corral("run", "--", "sh", "-c", script)
		if code != 0 || !strings.Contains(out, "PUSHED") {
			t.Fatalf("git in the box: exit %d\n%s\n%s", code, out, errOut)
		}
		log := exec.Command("git", "--git-dir", filepath.Join(gitRoot, "repo.git"), "log", "-1", "--format=%s", "main")
		b, _ := log.Output()
		if strings.TrimSpace(string(b)) != "from-the-box" {
			t.Errorf("the host repository's main is %q, want the box's commit", b)
		}
	})
	t.Run("credential rules: a push to another repository or through a read-only credential is refused and logged", func(t *testing.T) {
		x.t = t
		credentialRulesRefuse(t, x, gitRoot, gitPort, roPort)
		rulesRefused = !t.Failed()
	})
	t.Run("codex exec answers through the broker", func(t *testing.T) {
		x.t = t
		// Codex first tries a WebSocket; the broker relays it as a plain
		// GET, the fake answers 404, and Codex falls back to HTTP after
		// about 6 s of retries (fakeOpenAI).
		out, errOut, code := x.corral("codex", "--", "exec", "--skip-git-repo-check", "say hello")
		if code != 0 || !strings.Contains(out, fakeCodexAnswer) {
			t.Fatalf("corral codex -- exec: exit %d\nstdout: %q\nstderr: %s", code, out, lastLines(errOut, 40))
		}
		checkKeys(t, oai.all(), "/v1/responses", "Authorization", "Bearer "+openaiKey)
	})
	t.Run("gemini -p answers through the broker", func(t *testing.T) {
		x.t = t
		// No --skip-trust: headless Gemini CLI refuses an untrusted folder
		// (and would downgrade --yolo there), and corral trusts the
		// project for every gemini session (core/agent GeminiTrustVar).
		out, errOut, code := x.corral("gemini", "--", "-p", "say hello")
		if code != 0 || !strings.Contains(out, fakeGeminiAnswer) {
			t.Fatalf("corral gemini -- -p: exit %d\nstdout: %q\nstderr: %s", code, out, lastLines(errOut, 40))
		}
		checkKeys(t, gem.all(), ":streamGenerateContent", "X-Goog-Api-Key", geminiKey)
	})
	t.Run("the broker logged credential lines", func(t *testing.T) {
		x.t = t
		b, err := os.ReadFile(filepath.Join(x.home, "logs", "egress-"+x.box+".jsonl"))
		must(t, err)
		log := string(b)
		for _, name := range []string{"anthropic", "gitfake", "openai", "gemini"} {
			if want := `"kind":"credential","name":"` + name + `"`; !strings.Contains(log, want) {
				t.Errorf("egress log lacks %s", want)
			}
		}
		if !strings.Contains(log, `"status":200`) {
			t.Error("egress log has no credential line with status 200")
		}
		for name, s := range secrets {
			if strings.Contains(log, s) {
				t.Errorf("the egress log holds the %s", name)
			}
		}
		if claudeRoute != "" && strings.Contains(log, routeRe.FindStringSubmatch(claudeRoute)[1]) {
			t.Error("the egress log holds a route token")
		}
	})
	t.Run("no secret anywhere in the guest", func(t *testing.T) {
		x.t = t
		// One walk of the guest for every secret (the walk is most of the
		// time under TCG).
		var names, hexed []string
		for name, s := range secrets {
			names, hexed = append(names, name), append(hexed, hex.EncodeToString([]byte(s)))
		}
		out := x.ok("run", "--", "sudo", "python3", "-c", scanScript, strings.Join(hexed, ","), proj)
		if !strings.HasPrefix(out, "HITS 0\n") {
			t.Errorf("a secret is in the guest (keys in the order %v):\n%s", names, out)
		}
	})
	t.Run("a credential used, the log flooded, the audit still shows the use", func(t *testing.T) {
		x.t = t
		self := fmt.Sprintf("127.0.0.1:%d", meta.BrokerPort)
		if meta.VMType == "qemu" && claudeRoute != "" {
			// Under the host funnel the routes answer only the box's own
			// connections: the route with its token, from the host's
			// loopback and naming the broker, is refused.
			_, path, _ := strings.Cut(strings.TrimPrefix(claudeRoute, "http://"), "/")
			if code := credRequest(self, "/"+path+"/v1/models", self); code != http.StatusForbidden {
				t.Errorf("the route with its token from the host's loopback: status %d, want 403", code)
			}
		}
		const flood = 70000
		start := time.Now()
		statuses := floodCredentialRoutes(self, flood)
		t.Logf("%d bogus credential requests in %s: statuses %v (0: no answer)", flood, time.Since(start).Round(time.Millisecond), statuses)
		for code, n := range statuses {
			if code != http.StatusForbidden && code != 0 {
				t.Errorf("%d bogus requests got status %d, want 403", n, code)
			}
		}
		if statuses[0] > flood/100 {
			t.Errorf("%d of %d bogus requests got no answer", statuses[0], flood)
		}
		refused := statuses[http.StatusForbidden]
		x.ok("stop") // the broker writes its counts when it stops
		type egressJSON struct {
			Credentials []struct {
				Credential string `json:"credential"`
				Uses       int    `json:"uses"`
			} `json:"credentials"`
			Refused int `json:"credential_refused"`
		}
		var eg egressJSON
		uses := map[string]int{}
		for deadline := time.Now().Add(2 * time.Minute); ; {
			eg = egressJSON{}
			must(t, json.Unmarshal([]byte(x.ok("egress", x.box, "--json")), &eg))
			uses = map[string]int{}
			for _, c := range eg.Credentials {
				uses[c.Credential] = c.Uses
			}
			if uses["anthropic"] >= 1 && uses["gitfake"] >= 1 && eg.Refused >= refused {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("within 2m of the stop, corral egress --json shows uses %v and %d refused (want anthropic and gitfake used, >= %d refused)", uses, eg.Refused, refused)
			}
			time.Sleep(time.Second)
		}
		for _, name := range []string{"openai", "gemini"} {
			if uses[name] < 1 {
				t.Errorf("corral egress --json shows no use of %s: %v", name, uses)
			}
		}
		audit := x.ok("audit", "--box", x.box)
		for _, name := range []string{"anthropic", "gitfake"} {
			found := false
			for _, line := range strings.Split(audit, "\n") {
				found = found || (strings.Contains(line, "credential-use") && strings.Contains(line, "credential="+name))
			}
			if !found {
				t.Errorf("corral audit lists no credential-use of %s", name)
			}
		}
		// The pushes the credential rules refused (credentialRulesRefuse)
		// are in the audit too, as refusals for a rule.
		for _, name := range []string{"gitfake", "gitro"} {
			if !rulesRefused {
				break
			}
			found := false
			for _, line := range strings.Split(audit, "\n") {
				found = found || (strings.Contains(line, "credential-refused") && strings.Contains(line, "credential="+name) && strings.Contains(line, "reason=rule"))
			}
			if !found {
				t.Errorf("corral audit lists no credential-refused of %s for a rule", name)
			}
		}
		if n := strings.Count(audit, "\n"); n > 2000 {
			t.Errorf("corral audit has %d lines for the box: the flood was not aggregated", n)
		}
		raw, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
		for name, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("the audit log holds the %s", name)
			}
		}
	})
	t.Run("no secret in the box's disk after stop", func(t *testing.T) {
		x.t = t
		x.ok("stop") // a no-op after the flood's stop
		disks, _ := filepath.Glob(filepath.Join(x.home, "lima", x.box, "*disk*"))
		if len(disks) == 0 {
			t.Fatal("no disk image found")
		}
		for _, d := range disks {
			b, err := os.ReadFile(d)
			must(t, err)
			for name, s := range secrets {
				if n := strings.Count(string(b), s); n != 0 {
					t.Errorf("%s holds the %s %d times", d, name, n)
				}
			}
			t.Logf("%s: %d MB scanned, 0 hits", filepath.Base(d), len(b)>>20)
		}
	})
}

// anthropicUses counts the fake Messages API's turns that carried the real
// key, and fails the test on any other x-api-key value.
func anthropicUses(t *testing.T, reqs []fakeReq, key string) int {
	n := 0
	for _, r := range reqs {
		if r.Path == "/v1/messages" && r.Header.Get("X-Api-Key") == key {
			n++
		}
		if v := r.Header.Get("X-Api-Key"); v != "" && v != key {
			t.Errorf("the fake API got x-api-key %q, not the real key", v)
		}
	}
	return n
}

// credRequest sends one origin-form request to a broker at addr, as a box
// would, and returns the status (0 when the broker did not answer).
func credRequest(addr, target, host string) int {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nX-Api-Key: corral-brokered-placeholder\r\n\r\n", target, host)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// floodCredentialRoutes sends n bogus credential requests (no token, a
// wrong token, a foreign Host) to the broker at addr from the host's
// loopback, eight at a time, and counts the statuses (0: no answer). The
// broker closes the connection after a refusal, so each request is a
// connection of its own.
func floodCredentialRoutes(addr string, n int) map[int]int {
	bogus := []struct{ target, host string }{
		{"/corral/credential/anthropic/v1/messages", addr},
		{"/corral/credential/" + strings.Repeat("e", 64) + "/anthropic/v1/messages", addr},
		{"/corral/credential/" + strings.Repeat("f", 64) + "/gitfake/repo.git/info/refs", "evil.example.test"},
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			mine := map[int]int{}
			for i := w; i < n; i += 8 {
				b := bogus[i%len(bogus)]
				mine[credRequest(addr, b.target, b.host)]++
			}
			mu.Lock()
			defer mu.Unlock()
			for k, v := range mine {
				statuses[k] += v
			}
		})
	}
	wg.Wait()
	return statuses
}

// otherRoute is the path of a credential route another box's broker
// issued ("/corral/credential/<token>/<name>"), set by the first test of
// the run that has one: TestAgentCLIsThroughBroker (a host broker of box
// "hoste2e"), which runs in the same lane as TestHostFunnel and before it
// (packaging TestE2ECrossTestDependencies), or TestClaudeBrokered when the
// whole suite runs in one process.
var otherRoute string

// otherBoxRefusesRoute checks, from inside x's box (running in broker
// mode), that x's broker refuses the route token another box's broker
// issued (otherRoute): the same path on x's own broker answers 403; and,
// when TestClaudeBrokered's box ran in this process, that its broker's
// address does not answer with a credential. TestHostFunnel calls it.
func otherBoxRefusesRoute(t *testing.T, x *h) {
	if otherRoute == "" {
		t.Skip("no route of another box: neither TestAgentCLIsThroughBroker nor TestClaudeBrokered ran before this test in this lane")
	}
	meta := x.meta(t)
	if meta.Network != "broker" {
		t.Skipf("box %s is not in broker mode (%q): it has no credential routes", x.box, meta.Network)
	}
	// Where this box reaches its own broker: the funnel's address under
	// qemu, the slirp gateway otherwise (core/funnel).
	guestHost := funnel.BrokerGuestHost
	if meta.VMType == "qemu" {
		guestHost = funnel.GuestAddr
	}
	own := fmt.Sprintf("http://%s:%d%s/v1/models", guestHost, meta.BrokerPort, otherRoute)
	curl := []string{"run", "--", "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "*", "--max-time", "20",
		"-H", "x-api-key: corral-brokered-placeholder"}
	if status := x.ok(append(curl, own)...); status != "403" {
		t.Errorf("box %s's broker answered another box's route token with %q, want 403", x.box, status)
	}
	if claudeRoute == "" {
		return
	}
	// The first box's broker address: unreachable from this box (curl
	// fails) or refused, never answered.
	out, _, code := x.corral(append(curl, claudeRoute+"/v1/models")...)
	if code == 0 && out != "403" && out != "000" {
		t.Errorf("from box %s, the other box's route answered %q", x.box, out)
	}
}
