//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/credential"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/pins"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/guest"
)

// hostAgents are the pinned Codex and Gemini CLI unpacked on the host,
// run through the box's own wrappers (guest/agents/*.sh, with the install
// directory moved): what `corral codex` and `corral gemini` run in a box.
type hostAgents struct {
	codex, gemini string // the wrappers
	// geminiDefaults is set when Gemini CLI will read the wrapper's
	// system-defaults file: it skips one below a group- or world-writable
	// directory (such as /tmp).
	geminiDefaults bool
}

// npmCache is where the test image's build keeps the verified pinned
// tarballs (packaging/linux/build-image.sh NPM_CACHE).
func npmCache() string {
	if d := os.Getenv("CORRAL_NPM_CACHE"); d != "" {
		return d
	}
	return "/var/cache/corral/npm"
}

// unpackAgents unpacks the pinned packages from the npm cache, verified
// against core/pins, and writes the wrappers. It skips the test when a
// package is not in the cache.
func unpackAgents(t *testing.T) hostAgents {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the pinned Codex and Node packages are Linux builds")
	}
	arch := runtime.GOARCH
	codex, err := pins.Resolve("@openai/codex@*-linux-{arch}", arch)
	must(t, err)
	node, err := pins.Resolve("node-linux-{arch}", arch)
	must(t, err)
	gemini, err := pins.Lookup("@google/gemini-cli")
	must(t, err)
	tgz := map[string]string{}
	for _, p := range []pins.Package{codex, node, gemini} {
		path := filepath.Join(npmCache(), p.File())
		if _, err := os.Stat(path); err != nil {
			t.Skipf("%s is not in the npm cache %s: build the test image (packaging/linux/build-image.sh fills it), "+
				"or run packaging/linux/npm-fetch.sh %s DIR and set CORRAL_NPM_CACHE=DIR", p.File(), npmCache(), p.Spec())
		}
		if err := pins.Verify(path, p); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		tgz[p.Name] = path
	}
	dir := agentsDir(t)
	vendor := regexp.MustCompile(`^package/vendor/[^/]+/((bin|codex-path)/[^/]+)$`)
	untar(t, tgz[codex.Name], func(name string) string {
		if m := vendor.FindStringSubmatch(name); m != nil {
			return filepath.Join(dir, "codex", m[1])
		}
		return ""
	})
	untar(t, tgz[node.Name], func(name string) string {
		if name == "package/bin/node" {
			return filepath.Join(dir, "node", "bin", "node")
		}
		return ""
	})
	untar(t, tgz[gemini.Name], func(name string) string {
		if rest, ok := strings.CutPrefix(name, "package/"); ok && rest != "" {
			return filepath.Join(dir, "gemini", rest)
		}
		return ""
	})
	a := hostAgents{codex: filepath.Join(dir, "codex-wrapper"), gemini: filepath.Join(dir, "gemini-wrapper"), geminiDefaults: secureChain(dir)}
	must(t, os.WriteFile(a.codex, []byte(wrapper(t, "codex", dir)), 0o755))
	must(t, os.WriteFile(a.gemini, []byte(wrapper(t, "gemini", dir)), 0o755))
	// gemini.sh writes the system-defaults file the wrapper names.
	m := regexp.MustCompile(`(?m)^printf '([^']*)\\n' >"\$base/gemini-brokered.json"$`).FindStringSubmatch(guest.AgentInstall("gemini"))
	if m == nil {
		t.Fatal("guest/agents/gemini.sh no longer writes gemini-brokered.json as this test expects")
	}
	must(t, os.WriteFile(filepath.Join(dir, "gemini-brokered.json"), []byte(m[1]+"\n"), 0o644))
	return a
}

// agentsDir is where the agents are unpacked: under the user's cache
// directory when no directory above it is group- or world-writable (so
// Gemini CLI reads the wrapper's defaults file there), else a temporary
// directory.
func agentsDir(t *testing.T) string {
	if c, err := os.UserCacheDir(); err == nil && os.MkdirAll(c, 0o700) == nil && secureChain(c) {
		d, err := os.MkdirTemp(c, "corral-e2e-agents-")
		if err == nil {
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	return t.TempDir()
}

// secureChain reports whether no directory from dir up to / is group- or
// world-writable, the check Gemini CLI makes before it reads a system
// settings file.
func secureChain(dir string) bool {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm()&0o022 != 0 {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

// wrapper is the box's wrapper of agent (the here-document its install
// step writes to /usr/local/bin), with the install directory moved to dir.
func wrapper(t *testing.T, agent, dir string) string {
	t.Helper()
	script := guest.AgentInstall(agent)
	_, rest, ok := strings.Cut(script, "<<'WRAP'\n")
	body, _, ok2 := strings.Cut(rest, "\nWRAP\n")
	if !ok || !ok2 {
		t.Fatalf("guest/agents/%s.sh has no <<'WRAP' here-document", agent)
	}
	return strings.ReplaceAll(body, "/usr/local/lib/corral-agents", dir) + "\n"
}

// untar extracts the regular files of a .tgz that dest maps to a path
// ("" skips), executable when the archive says so.
func untar(t *testing.T, path string, dest func(name string) string) {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	must(t, err)
	tr := tar.NewReader(gz)
	n := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		to := dest(h.Name)
		if to == "" || h.Typeflag != tar.TypeReg || strings.Contains(h.Name, "..") {
			continue
		}
		must(t, os.MkdirAll(filepath.Dir(to), 0o755))
		out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&0o755|0o644)
		must(t, err)
		_, err = io.Copy(out, tr)
		must(t, errors.Join(err, out.Close()))
		n++
	}
	if n == 0 {
		t.Fatalf("%s: nothing extracted", path)
	}
}

// hostBroker runs a real box broker (core/broker, in this process) for a
// claude box whose trusted layer configures trusted, started from an
// environment without any key. It returns the layout, the box and the
// broker's address, and a stop function that ends the broker and waits
// for it (it flushes its credential evidence to the audit log then).
func hostBroker(t *testing.T, trusted string) (paths.Layout, string, string, func()) {
	t.Helper()
	root := t.TempDir()
	l := paths.Layout{Home: filepath.Join(root, "h")}
	proj := filepath.Join(root, "proj")
	must(t, os.MkdirAll(proj, 0o755))
	proj, _ = filepath.EvalSymlinks(proj)
	p, err := project.Resolve(proj, l.LimaHome())
	must(t, err)
	must(t, l.Ensure())
	// The broker's own address is part of its config (an origin-form
	// credential request must name it): take a free port first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	must(t, boxmeta.Write(l, boxmeta.Meta{Name: p.Box, Project: proj, Network: "broker", BrokerPort: port}))
	must(t, os.MkdirAll(l.ProjectsDir(), 0o700))
	must(t, os.WriteFile(l.ProjectConfig(p.Box), []byte(trusted), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- broker.Run(ctx, broker.Options{Layout: l, Box: p.Box, Listen: fmt.Sprintf("127.0.0.1:%d", port),
			Getenv:    func(string) (string, bool) { return "", false }, // started without keys
			Listening: func(a net.Addr) { addrc <- a.String() },
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil))})
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("broker: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the broker did not stop within 30s")
		}
	}
	t.Cleanup(stop)
	select {
	case a := <-addrc:
		return l, p.Box, a, stop
	case err := <-done:
		t.Fatalf("broker exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the broker did not listen within 30s")
	}
	return paths.Layout{}, "", "", nil
}

// TestAgentCLIsThroughBroker runs the real, pinned Codex and Gemini CLI on
// the host (no VM) through their box wrappers, against a real box broker
// whose [credentials.openai] and [credentials.gemini] upstreams are the
// fake APIs behind a test CA. The broker starts without the keys; the
// session supplies them over the control socket, gets base URLs and
// placeholders, and the CLIs answer with the fakes' text while the fakes
// see only the real keys. It needs the pinned packages in the npm cache
// the test image's build fills (skipped otherwise); about 30 s.
func TestAgentCLIsThroughBroker(t *testing.T) {
	agents := unpackAgents(t)
	dir := t.TempDir()
	ca := newTestCA(t, dir)
	oai, gem := &fakeOpenAI{}, &fakeGemini{}
	oaiPort, gemPort := ca.serveTLS(t, oai), ca.serveTLS(t, gem)
	rnd := make([]byte, 16)
	rand.Read(rnd)
	openaiKey := "sk-proj-e2e-" + hex.EncodeToString(rnd)
	rand.Read(rnd)
	geminiKey := "AIza-e2e-" + hex.EncodeToString(rnd)

	l, name, addr, stop := hostBroker(t, agentCredentials(oaiPort, gemPort, ca.pemPath))
	served, err := credential.Ask(context.Background(), l.BrokerControl(name), "hoste2e",
		func(v string) (string, bool) {
			switch v {
			case "E2E_OPENAI_KEY":
				return openaiKey, true
			case "E2E_GEMINI_KEY":
				return geminiKey, true
			}
			return "", false
		})
	must(t, err)
	if got := strings.Join(served.Names(), ","); got != "gemini,openai" {
		t.Fatalf("the broker serves %q, want gemini,openai", got)
	}
	// Another box's credential route, for TestHostFunnel's check that its
	// own broker refuses it (otherBoxRefusesRoute): this test runs in the
	// same lane, before it.
	if otherRoute == "" {
		otherRoute = "/corral/credential/" + served.Token + "/openai"
	}
	home := filepath.Join(dir, "home")
	must(t, os.MkdirAll(filepath.Join(home, ".gemini"), 0o700))
	if !agents.geminiDefaults {
		// Gemini CLI skips the wrapper's defaults file below a writable
		// directory such as /tmp: choose the same auth type in the
		// user's settings instead.
		t.Log("the agents are unpacked below a group- or world-writable directory: Gemini CLI's auth type goes in the user settings")
		must(t, os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(`{"security":{"auth":{"selectedType":"gemini-api-key"}}}`), 0o600))
	}
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C.UTF-8"}
	for _, v := range served.SessionVars("http://" + addr) {
		env = append(env, v.Name+"="+v.Value)
	}
	proj := filepath.Join(dir, "work")
	must(t, os.MkdirAll(proj, 0o755))
	run := func(t *testing.T, argv ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env, cmd.Dir, cmd.Stdin = env, proj, nil
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		start := time.Now()
		err := cmd.Run()
		t.Logf("%s: %v in %s", filepath.Base(argv[0]), err, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%v: %v\nstdout: %s\nstderr: %s", argv, err, out.String(), lastLines(errOut.String(), 30))
		}
		return out.String()
	}

	t.Run("codex exec answers through the broker", func(t *testing.T) {
		out := run(t, agents.codex, "exec", "--skip-git-repo-check", "say hello")
		if !strings.Contains(out, fakeCodexAnswer) {
			t.Errorf("codex exec printed %q, want the fake's answer", out)
		}
		checkKeys(t, oai.all(), "/v1/responses", "Authorization", "Bearer "+openaiKey)
	})
	t.Run("gemini -p answers through the broker", func(t *testing.T) {
		out := run(t, agents.gemini, "--skip-trust", "-p", "say hello")
		if !strings.Contains(out, fakeGeminiAnswer) {
			t.Errorf("gemini -p printed %q, want the fake's answer", out)
		}
		checkKeys(t, gem.all(), ":streamGenerateContent", "X-Goog-Api-Key", geminiKey)
	})
	t.Run("after a flood of bogus requests the audit log counts the uses", func(t *testing.T) {
		const flood = 70000
		start := time.Now()
		statuses := floodCredentialRoutes(addr, flood)
		t.Logf("%d bogus credential requests in %s: statuses %v", flood, time.Since(start).Round(time.Millisecond), statuses)
		if statuses[403] != flood {
			t.Errorf("statuses %v, want %d refused with 403", statuses, flood)
		}
		stop() // the broker writes its counts when it stops
		evs, err := audit.Read(l.AuditLog(), audit.Filter{Box: name})
		must(t, err)
		uses, refused := audit.CredentialUses(evs)
		got := map[string]int{}
		for _, u := range uses {
			got[u.Credential] = u.Uses
		}
		if got["openai"] < 1 || got["gemini"] < 1 || refused != flood {
			t.Errorf("credential uses in the audit log: %v, %d refused (want %d)", got, refused, flood)
		}
		if len(evs) > 100 {
			t.Errorf("%d audit events for the box: the refusals were not aggregated", len(evs))
		}
		for _, f := range []string{l.AuditLog(), l.EgressLog(name)} {
			b, _ := os.ReadFile(f)
			if bytes.Contains(b, []byte(openaiKey)) || bytes.Contains(b, []byte(geminiKey)) || bytes.Contains(b, []byte(served.Token)) {
				t.Errorf("%s holds a key or the route token", f)
			}
		}
	})
}

// agentCredentials is the trusted layer of a claude box that brokers the
// OpenAI and Gemini keys too, from host variables, to fakes behind the
// test CA: what `corral codex` and `corral gemini` in that box use.
func agentCredentials(openaiPort, geminiPort, caPEM string) string {
	return fmt.Sprintf(`network = "broker"
agent = "claude"

[credentials.openai]
upstream = "https://127.0.0.1:%s/v1"
header = "authorization"
env_from_host = "E2E_OPENAI_KEY"
ca = %q

[credentials.gemini]
upstream = "https://127.0.0.1:%s"
header = "x-goog-api-key"
env_from_host = "E2E_GEMINI_KEY"
ca = %q
`, openaiPort, caPEM, geminiPort, caPEM)
}

// checkKeys fails unless a request whose path ends in turn carried header
// = want, and no request carried another value of it (a placeholder or a
// box's own value reaching the upstream).
func checkKeys(t *testing.T, reqs []fakeReq, turn, header, want string) {
	t.Helper()
	saw := false
	for _, r := range reqs {
		t.Logf("fake got %s %s %s=%t", r.Method, r.Path, header, r.Header.Get(header) == want)
		if v := r.Header.Get(header); v != want {
			t.Errorf("%s %s carried %s %q, not the real key", r.Method, r.Path, header, v)
		}
		saw = saw || strings.HasSuffix(r.Path, turn)
	}
	if !saw {
		t.Errorf("the fake never got a request ending in %s", turn)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
