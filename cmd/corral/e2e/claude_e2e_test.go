//go:build e2e

package e2e

import (
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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
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

// scanScript runs as root in the box and counts occurrences of the key
// (given hex-encoded, so that its own argv does not hold it) in every
// process's environment and argv and in every file outside /proc, /sys,
// /dev and the project mount. It prints "HITS n" and the places.
const scanScript = `import os, sys
key = bytes.fromhex(sys.argv[1]); skip = ("/proc", "/sys", "/dev", sys.argv[2])
hits = []
for pid in os.listdir("/proc"):
    if not pid.isdigit(): continue
    for f in ("environ", "cmdline"):
        try:
            if key in open("/proc/%s/%s" % (pid, f), "rb").read(): hits.append("/proc/%s/%s" % (pid, f))
        except OSError: pass
for top, dirs, files in os.walk("/"):
    dirs[:] = [d for d in dirs if os.path.join(top, d) not in skip]
    for n in files:
        p = os.path.join(top, n)
        try:
            if not os.path.isfile(p) or os.path.islink(p): continue
            with open(p, "rb") as fh:
                prev = b""
                while True:
                    b = fh.read(1 << 20)
                    if not b: break
                    if key in prev + b: hits.append(p); break
                    prev = b[-len(key):]
        except OSError: pass
print("HITS", len(hits)); [print(h) for h in hits]
`

// TestClaudeBrokered runs the real Claude Code (from the pinned npm
// package in the test image) in a broker-mode box whose API key and git
// token only the broker holds, against a fake Messages API and a fake git
// host on host loopback behind TLS with a test CA. One VM; about 4 to 6
// minutes under TCG (boot, the session, a root scan of the guest, stop).
func TestClaudeBrokered(t *testing.T) {
	base := setup(t)
	proj := filepath.Join(filepath.Dir(base.project), "projc")
	must(t, os.MkdirAll(proj, 0o755))
	x := &h{t: t, bin: base.bin, home: base.home, project: proj, env: base.env}
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(x.ok("config", "show", "--json")), &cfg))
	x.box = cfg.Box

	rnd := make([]byte, 16)
	rand.Read(rnd)
	key := "sk-ant-e2e-" + hex.EncodeToString(rnd)
	rand.Read(rnd)
	token := "ghp_e2e" + hex.EncodeToString(rnd)

	dir := t.TempDir()
	ca := newTestCA(t, dir)
	api := &fakeAnthropic{}
	apiPort := ca.serveTLS(t, api)
	gitRoot := filepath.Join(dir, "git")
	must(t, os.MkdirAll(gitRoot, 0o755))
	runGit(t, dir, "init", "-q", "--bare", "-b", "main", filepath.Join(gitRoot, "repo.git"))
	runGit(t, filepath.Join(gitRoot, "repo.git"), "config", "http.receivepack", "true")
	seed := filepath.Join(dir, "seed")
	runGit(t, dir, "clone", "-q", filepath.Join(gitRoot, "repo.git"), seed)
	runGit(t, seed, "commit", "-q", "--allow-empty", "-m", "seed")
	runGit(t, seed, "push", "-q", "origin", "HEAD:main")
	gitPort := gitServer(t, ca, gitRoot, token)

	trusted := fmt.Sprintf(`network = "broker"
agent = "claude"
sudo = true
golden = false

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
`, apiPort, ca.pemPath, gitPort, ca.pemPath)
	must(t, os.MkdirAll(filepath.Join(x.home, "projects"), 0o700))
	must(t, os.WriteFile(filepath.Join(x.home, "projects", x.box+".toml"), []byte(trusted), 0o600))
	defer x.corral("rm", "-f")
	// The broker reads env_from_host credentials from the environment of
	// the command that starts it; ANTHROPIC_API_KEY is set too, to prove
	// the session withholds it.
	secrets := []string{"E2E_ANTHROPIC_KEY=" + key, "E2E_GIT_TOKEN=" + token, "ANTHROPIC_API_KEY=" + key}
	up := func(args ...string) (string, string, int) { return x.corralEnv(secrets, args...) }
	if o, e, code := up("up"); code != 0 {
		t.Fatalf("corral up: %d\n%s\n%s", code, o, e)
	}

	if _, _, code := x.corral("run", "--", "test", "-x", "/usr/local/bin/claude-real"); code != 0 {
		t.Fatalf("the test image has no Claude Code (/usr/local/bin/claude-real)\nhint: rebuild it with packaging/linux/build-image.sh (it installs the package pinned in core/pins/npm.txt)")
	}
	t.Run("claude -p answers through the broker", func(t *testing.T) {
		x.t = t
		out, errOut, code := up("claude", "--", "-p", "say hello")
		if code != 0 || !strings.Contains(out, fakeAnswer) {
			t.Fatalf("corral claude -p: exit %d\nstdout: %q\nstderr: %s", code, out, errOut)
		}
		var sawKey bool
		for _, r := range api.all() {
			t.Logf("fake API got %s %s x-api-key=%t authorization=%t beta=%q", r.Method, r.Path,
				r.Header.Get("X-Api-Key") != "", r.Header.Get("Authorization") != "", r.Header.Get("Anthropic-Beta"))
			if r.Path == "/v1/messages" && r.Header.Get("X-Api-Key") == key {
				sawKey = true
			}
			if v := r.Header.Get("X-Api-Key"); v != "" && v != key {
				t.Errorf("the fake API got x-api-key %q, not the real key", v)
			}
		}
		if !sawKey {
			t.Error("the fake API never saw the real key on POST /v1/messages")
		}
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
			cmd.Env = append(append([]string{}, x.env...), secrets...)
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
		if p := os.Getenv("CORRAL_BENCH_OUT"); p != "" {
			f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err == nil {
				f.WriteString(line)
				f.Close()
			}
		}
	})
	t.Run("the session environment carries no secret", func(t *testing.T) {
		x.t = t
		got := x.ok("claude", "--", "--version") // the wrapper works
		if !strings.Contains(got, "Claude Code") {
			t.Errorf("claude --version = %q", got)
		}
		env := x.ok("run", "--", "env")
		if strings.Contains(env, key) || strings.Contains(env, token) {
			t.Error("a secret is in the session environment")
		}
		if !strings.Contains(env, "ANTHROPIC_API_KEY=corral-brokered-placeholder") || !strings.Contains(env, "/corral/credential/anthropic\n") {
			t.Errorf("no placeholder or base URL in the session environment:\n%s", env)
		}
		if !strings.Contains(env, "/corral/credential/gitfake/.insteadOf") {
			t.Errorf("no git insteadOf in the session environment:\n%s", env)
		}
	})
	t.Run("a box process's own credential headers are replaced", func(t *testing.T) {
		x.t = t
		var meta struct {
			BrokerPort int `json:"broker_port"`
		}
		b, err := os.ReadFile(filepath.Join(x.home, "boxes", x.box+".json"))
		must(t, err)
		must(t, json.Unmarshal(b, &meta))
		base := fmt.Sprintf("http://192.168.5.4:%d/corral/credential/anthropic", meta.BrokerPort)
		n := len(api.all())
		out := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "-H", "x-api-key: box-fake", "-H", "Authorization: Bearer box-fake", base+"/v1/models")
		reqs := api.all()
		if len(reqs) != n+1 {
			t.Fatalf("the fake API got %d new requests (box said %q)", len(reqs)-n, out)
		}
		r := reqs[n]
		if r.Header.Get("X-Api-Key") != key || r.Header.Get("Authorization") != "" {
			t.Errorf("forwarded x-api-key real=%t, authorization %q", r.Header.Get("X-Api-Key") == key, r.Header.Get("Authorization"))
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
	t.Run("the broker logged credential lines", func(t *testing.T) {
		x.t = t
		b, err := os.ReadFile(filepath.Join(x.home, "logs", "egress-"+x.box+".jsonl"))
		must(t, err)
		log := string(b)
		for _, want := range []string{`"kind":"credential","name":"anthropic"`, `"kind":"credential","name":"gitfake"`, `"status":200`} {
			if !strings.Contains(log, want) {
				t.Errorf("egress log lacks %s", want)
			}
		}
		if strings.Contains(log, key) || strings.Contains(log, token) {
			t.Error("the egress log holds a secret")
		}
	})
	t.Run("no secret anywhere in the guest", func(t *testing.T) {
		x.t = t
		for name, s := range map[string]string{"key": key, "token": token} {
			out := x.ok("run", "--", "sudo", "python3", "-c", scanScript, hex.EncodeToString([]byte(s)), proj)
			if !strings.HasPrefix(out, "HITS 0\n") {
				t.Errorf("the %s is in the guest:\n%s", name, out)
			}
		}
	})
	t.Run("no secret in the box's disk after stop", func(t *testing.T) {
		x.t = t
		x.ok("stop")
		disks, _ := filepath.Glob(filepath.Join(x.home, "lima", x.box, "*disk*"))
		if len(disks) == 0 {
			t.Fatal("no disk image found")
		}
		for _, d := range disks {
			b, err := os.ReadFile(d)
			must(t, err)
			for name, s := range map[string]string{"key": key, "token": token} {
				if n := strings.Count(string(b), s); n != 0 {
					t.Errorf("%s holds the %s %d times", d, name, n)
				}
			}
			t.Logf("%s: %d MB scanned, 0 hits", filepath.Base(d), len(b)>>20)
		}
	})
}
