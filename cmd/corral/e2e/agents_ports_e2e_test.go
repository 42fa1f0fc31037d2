//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/pins"
)

// The ports of the suite's box (setup writes e2ePorts into the global
// config, so the box forwards them from its first start): the host's
// 127.0.0.1:e2eHostPort is the box's e2eGuestPort. e2eLivePort is added to
// the running box with corral port; e2eUnconfigured is forwarded by nothing.
const (
	e2eHostPort     = 38451
	e2eGuestPort    = 8000
	e2eLiveHost     = 38452
	e2eLiveGuest    = 8001
	e2eUnconfigured = 8002
)

var e2ePorts = fmt.Sprintf(`ports = ["%d:%d"]`, e2eHostPort, e2eGuestPort)

// agentVersions: `corral codex -- --version` and `corral gemini --
// --version` run the pinned Codex and Gemini CLI (the offline test image
// carries both, installed by their own install steps) in the box through
// their corral commands; the box's agent is "shell", so each prints the
// one-line note about it on stderr. About 5 s for codex and 10-40 s for
// gemini (Node parsing Gemini CLI's bundle under TCG).
func agentVersions(t *testing.T, x *h) {
	arch := runtime.GOARCH
	codex, err := pins.Resolve("@openai/codex@*-linux-{arch}", arch)
	must(t, err)
	gemini, err := pins.Lookup("@google/gemini-cli")
	must(t, err)
	codexVersion, _, _ := strings.Cut(codex.Version, "-linux-")
	for _, tc := range []struct{ cmd, want string }{
		{"codex", "codex-cli " + codexVersion},
		{"gemini", gemini.Version},
	} {
		out, errOut, code := x.corral(tc.cmd, "--", "--version")
		if code != 0 || strings.TrimSpace(out) != tc.want {
			t.Errorf("corral %s -- --version: exit %d, stdout %q (want %q)\nstderr: %s", tc.cmd, code, out, tc.want, errOut)
		}
		if !strings.Contains(errOut, "agent is shell: "+tc.cmd+" runs only if the box has it installed") {
			t.Errorf("corral %s: no note about the box's agent on stderr: %q", tc.cmd, errOut)
		}
	}
	// corral agent NAME is the same command.
	if out := x.ok("agent", "codex", "--", "--version"); strings.TrimSpace(out) != "codex-cli "+codexVersion {
		t.Errorf("corral agent codex -- --version = %q", out)
	}
}

// serveInBox starts python's HTTP server on guest port p (every address)
// answering "port-P", and waits until it answers inside the guest. Its pid
// is kept in the box for stopServers.
func serveInBox(t *testing.T, x *h, p int) {
	dir := fmt.Sprintf("/tmp/e2e-ports/%d", p)
	x.ok("run", "--", "sh", "-c", fmt.Sprintf(
		// The braces keep the & to the server: "a && b && c & d" puts the
		// whole list in the background, and d ran before the mkdir.
		"mkdir -p %[1]s && echo port-%[2]d > %[1]s/index.html && { nohup python3 -m http.server %[2]d --bind 0.0.0.0 --directory %[1]s >/dev/null 2>&1 & echo $! > %[1]s.pid; }", dir, p))
	for deadline := time.Now().Add(60 * time.Second); ; {
		_, _, code := x.corral("run", "--", "curl", "-sf", "-o", "/dev/null", "--noproxy", "*", "--max-time", "5", fmt.Sprintf("http://127.0.0.1:%d/", p))
		if code == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest server on port %d never answered inside the guest", p)
		}
		time.Sleep(time.Second)
	}
}

// stopServers ends the servers serveInBox started, by their pids.
func stopServers(x *h) {
	x.corral("run", "--", "sh", "-c", `for f in /tmp/e2e-ports/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done; true`)
}

// hostGet fetches http://127.0.0.1:PORT/ on the host, retrying until the
// deadline (Lima's forwarder notices a new guest listener within seconds).
func hostGet(port int, within time.Duration) (string, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	var last error
	for deadline := time.Now().Add(within); ; {
		resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return strings.TrimSpace(string(b)), nil
			}
			err = fmt.Errorf("status %d, %v", resp.StatusCode, rerr)
		}
		last = err
		if time.Now().After(deadline) {
			return "", last
		}
		time.Sleep(time.Second)
	}
}

// forwardedPorts: a guest HTTP server on the configured port answers on
// the host's 127.0.0.1 (and on no other host address); one on an
// unconfigured port does not; `corral port` forwards another to the
// running box at once and writes it to the trusted layer. About 20-40 s
// on the shared running box.
func forwardedPorts(t *testing.T, x *h) {
	defer stopServers(x)
	serveInBox(t, x, e2eGuestPort)
	if got, err := hostGet(e2eHostPort, 60*time.Second); err != nil || got != fmt.Sprintf("port-%d", e2eGuestPort) {
		t.Errorf("configured port: host 127.0.0.1:%d answered %q, %v", e2eHostPort, got, err)
	}
	// Bound on 127.0.0.1 only: no listener on the host's wildcard address
	// for it (a connect to another local address is refused).
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() || ipn.IP.To4() == nil {
				continue
			}
			if c, err := net.DialTimeout("tcp", net.JoinHostPort(ipn.IP.String(), fmt.Sprint(e2eHostPort)), 2*time.Second); err == nil {
				c.Close()
				t.Errorf("the forwarded port answers on %s, not only on 127.0.0.1", ipn.IP)
			}
			break // one non-loopback address is enough; never more than a connect
		}
	}
	serveInBox(t, x, e2eUnconfigured)
	time.Sleep(5 * time.Second) // time for a forwarder that would (wrongly) pick it up
	if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", e2eUnconfigured), 2*time.Second); err == nil {
		c.Close()
		t.Errorf("an unconfigured guest port (%d) is reachable on the host's 127.0.0.1", e2eUnconfigured)
	}
	// corral port: live on the running box, through corral's ssh master.
	serveInBox(t, x, e2eLiveGuest)
	out := x.ok("port", fmt.Sprintf("%d:%d", e2eLiveHost, e2eLiveGuest))
	if !strings.Contains(out, "now forwards to its port") {
		t.Errorf("corral port: %q", out)
	}
	if got, err := hostGet(e2eLiveHost, 20*time.Second); err != nil || got != fmt.Sprintf("port-%d", e2eLiveGuest) {
		t.Errorf("corral port: host 127.0.0.1:%d answered %q, %v", e2eLiveHost, got, err)
	}
	b, err := os.ReadFile(filepath.Join(x.home, "projects", x.box+".toml"))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf(`ports = ["%d:%d"]`, e2eLiveHost, e2eLiveGuest)) {
		t.Errorf("trusted layer after corral port: %q, %v", b, err)
	}
	info := x.ok("info", "--json")
	if !strings.Contains(info, fmt.Sprintf(`"host": %d`, e2eLiveHost)) || !strings.Contains(info, fmt.Sprintf(`"host": %d`, e2eHostPort)) {
		t.Errorf("corral info --json lacks the ports:\n%s", info)
	}
}

// portAfterRestart: after a stop and an up, the port corral port added is
// in the instance's lima.yaml (applied at the start, no rebuild) and
// forwarded by Lima. About 10 s on the restarted box.
func portAfterRestart(t *testing.T, x *h) {
	b, err := os.ReadFile(filepath.Join(x.home, "lima", x.box, "lima.yaml"))
	if err != nil || !strings.Contains(string(b), fmt.Sprintf("hostPort: %d", e2eLiveHost)) {
		t.Fatalf("lima.yaml after the restart lacks hostPort %d: %v\n%s", e2eLiveHost, err, b)
	}
	defer stopServers(x)
	serveInBox(t, x, e2eLiveGuest)
	if got, err := hostGet(e2eLiveHost, 60*time.Second); err != nil || got != fmt.Sprintf("port-%d", e2eLiveGuest) {
		t.Errorf("after the restart: host 127.0.0.1:%d answered %q, %v", e2eLiveHost, got, err)
	}
}
