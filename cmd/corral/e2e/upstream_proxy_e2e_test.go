//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/broker/brokertest"
	"github.com/corral-dev/corral/core/desktoptest"
)

// e2eUpstreamProxy is TestHostFunnel's upstream proxy: Debian's squid on
// host loopback (brokertest.StartSquid), wanting user "alice" and a
// password that only a private Secret Service (gnome-keyring on a private
// D-Bus) holds, and letting through only 127.0.0.2; its origin server
// listens on 127.0.0.2. The box's trusted layer names it with
// upstream_proxy and no_proxy = 127.0.0.1, localhost and ::1, so every
// other subtest of TestHostFunnel (their upstreams are on 127.0.0.1 or
// localhost) is dialled directly, as before.
type e2eUpstreamProxy struct {
	squid  *brokertest.Squid
	pass   string
	env    []string // DBUS_SESSION_BUS_ADDRESS for `corral up`: the broker reads the keyring
	origin *hostServer
	port   string // the origin's port on 127.0.0.2
}

// startE2EUpstreamProxy starts the proxy, or says why it cannot (squid,
// openssl or the desktop keyring stack is not installed; test-deps.sh
// installs them), in which case the box runs without upstream_proxy.
func startE2EUpstreamProxy(t *testing.T) (*e2eUpstreamProxy, string) {
	t.Helper()
	if _, err := os.Stat(brokertest.SquidBinary()); err != nil {
		return nil, "squid is not installed (packaging/linux/test-deps.sh installs it)"
	}
	for _, p := range []string{"openssl", "dbus-daemon", "gnome-keyring-daemon", "secret-tool"} {
		if _, err := exec.LookPath(p); err != nil {
			return nil, p + " is not installed (packaging/linux/test-deps.sh installs it)"
		}
	}
	p := &e2eUpstreamProxy{pass: fmt.Sprintf("squid-pass-%d", time.Now().UnixNano())}
	p.squid = brokertest.StartSquid(t, "alice", p.pass, []string{"127.0.0.2/32"})
	bus := desktoptest.StartBus(t)
	kenv := desktoptest.StartKeyring(t, bus)
	store := exec.Command("secret-tool", "store", "--label", "corral e2e proxy", "service", "corral-e2e-proxy", "account", "alice")
	store.Env = kenv
	store.Stdin = strings.NewReader(p.pass) // never on an argv
	if out, err := store.CombinedOutput(); err != nil {
		t.Fatalf("secret-tool store: %v %s", err, out)
	}
	p.env = []string{"DBUS_SESSION_BUS_ADDRESS=" + bus}
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("listening on 127.0.0.2: %v", err)
	}
	_, p.port, _ = net.SplitHostPort(ln.Addr().String())
	p.origin = &hostServer{hits: map[string]int{}}
	srv := &http.Server{Handler: p.origin}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return p, ""
}

// trustedLines are the lines the box's trusted layer gets for p.
func (p *e2eUpstreamProxy) trustedLines() string {
	if p == nil {
		return ""
	}
	return `upstream_proxy = { url = "http://` + p.squid.Addr + `", keychain = { service = "corral-e2e-proxy", account = "alice" }, no_proxy = ["127.0.0.1", "localhost", "::1"] }` + "\n"
}

// upstreamProxySubtest: allowed requests from the box (absolute-form
// http, and a CONNECT tunnel) reach the origin on 127.0.0.2 through
// squid, which logs the checked address and the keychain's user; a
// denied request and a no_proxy destination never reach squid; squid's
// password is in no argv or environment in the box, in no file under
// corral's home, and not in the broker's argv or environment.
func upstreamProxySubtest(t *testing.T, x *h, p *e2eUpstreamProxy, proxy string, srv *hostServer) {
	before := len(p.squid.Requests())
	target := "http://127.0.0.2:" + p.port
	got := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-x", proxy, target+"/via-squid")
	if got != "HOST-REACHED /via-squid" || p.origin.count("/via-squid") != 1 {
		t.Fatalf("absolute-form through squid: %q, origin hits %d\n%s", got, p.origin.count("/via-squid"), p.squid.Logs())
	}
	got = x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-p", "-x", proxy, target+"/via-squid-tunnel")
	if got != "HOST-REACHED /via-squid-tunnel" {
		t.Fatalf("a CONNECT tunnel through squid: %q\n%s", got, p.squid.Logs())
	}
	// squid logs a tunnel when it ends: curl's own (-p) ends with curl,
	// the broker's tunnel for the plain request may stay in its pool of
	// idle upstream connections. So at least one line, each of them the
	// checked address as alice; the origin's count above says both arrived.
	want := "CONNECT 127.0.0.2:" + p.port + " alice 200"
	logged := p.squid.WaitRequests(before + 1)
	if len(logged) < before+1 {
		t.Errorf("squid logged %q after %d lines, want %q", logged, before, want)
	}
	for _, l := range logged[before:] {
		if l != want {
			t.Errorf("squid logged %q, want only %q", l, want)
		}
	}
	// Denied by the broker (and a no_proxy destination): squid sees
	// nothing more.
	if code := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "-o", "/dev/null", "-w", "%{http_code}", "--noproxy", "", "-x", proxy, "http://denied-by-broker.example.test/"); code != "403" {
		t.Errorf("a denied host: HTTP %q, want 403", code)
	}
	if got := x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-x", proxy, "http://127.0.0.1:"+srv.port+"/no-proxy"); got != "HOST-REACHED /no-proxy" {
		t.Errorf("a no_proxy destination: %q", got)
	}
	time.Sleep(time.Second) // squid logs a tunnel when it ends
	for _, l := range p.squid.Requests()[before:] {
		if l != want {
			t.Errorf("squid saw %q after the denied and the no_proxy request, want only %q:\n%s", l, want, p.squid.Logs())
		}
	}
	// The egress log says allowed for both, the same as without a proxy.
	egress, _ := os.ReadFile(filepath.Join(x.home, "logs", "egress-"+x.box+".jsonl"))
	if !strings.Contains(string(egress), `"host":"127.0.0.2"`) {
		t.Errorf("the egress log has no decision for 127.0.0.2")
	}

	// The password: in no argv or environment in the box (the pattern
	// reaches grep on stdin, from two halves, so that no argv of the scan
	// holds it), no file under corral's home, not the broker's argv or
	// environment on the host.
	half := len(p.pass) / 2
	scan := `a='` + p.pass[:half] + `'; b='` + p.pass[half:] + `'
printf '%s%s\n' "$a" "$b" > /tmp/pat.$$
n=0
for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
	if tr '\0' '\n' < "$f" 2>/dev/null | grep -q -F -f /tmp/pat.$$; then n=$((n+1)); echo "found in $f"; fi
done
rm -f /tmp/pat.$$
echo "count=$n"`
	if got := x.ok("run", "--", "sudo", "sh", "-c", scan); !strings.Contains(got, "count=0") {
		t.Errorf("squid's password in the box:\n%s", got)
	}
	filepath.Walk(x.home, func(path string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() || fi.Size() > 64<<20 {
			return nil
		}
		if b, err := os.ReadFile(path); err == nil && strings.Contains(string(b), p.pass) {
			t.Errorf("squid's password is in %s", path)
		}
		return nil
	})
	if pid := x.meta(t).BrokerPID; pid > 0 {
		for _, f := range []string{"cmdline", "environ"} {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f)); err == nil && strings.Contains(string(b), p.pass) {
				t.Errorf("squid's password is in the broker's %s", f)
			}
		}
	}
}
