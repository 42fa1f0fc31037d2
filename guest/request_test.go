package guest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/egress"
)

// requestBroker serves the request channel on loopback and writes a
// network.env naming it (as provision/40-network.sh does in the box).
func requestBroker(t *testing.T, network string) (*egress.RequestInbox, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	in := egress.NewRequestInbox(egress.RequestConfig{})
	srv, err := egress.NewServer(egress.Config{Requests: in, SelfAddrs: []string{ln.Addr().String()}, MaxTunnels: 8})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }() //nolint:errcheck
	t.Cleanup(func() { cancel(); <-done })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	env := filepath.Join(t.TempDir(), "network.env")
	if err := os.WriteFile(env, []byte("NETWORK="+network+"\nPROXY_HOST=127.0.0.1\nPROXY_PORT="+port+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return in, env
}

func runRequest(env string, args ...string) (int, string) {
	cmd := exec.Command("sh", append([]string{"-c", Request(), "corral-request"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "CORRAL_NETWORK_ENV=" + env, "CORRAL_SESSION=tests\x1b[2J"}
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}

// corral-request files a request with its reason and the asking process
// (this test binary, its parent), and the broker keeps it pending.
func TestRequestFiles(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	in, env := requestBroker(t, "broker")
	code, out := runRequest(env, "egress", "API.example.test:8443", "--why", "npm install needs the mirror")
	if code != 0 || !strings.Contains(out, "asked the user for egress to api.example.test:8443") {
		t.Fatalf("corral-request: exit %d: %s", code, out)
	}
	p := in.Pending()
	if len(p) != 1 {
		t.Fatalf("pending: %+v", p)
	}
	r := p[0]
	if r.Entry != "api.example.test:8443" || r.Why != "npm install needs the mirror" || r.Who.PID == 0 || r.Who.Exe == "" || r.Who.Session != "tests[2J" {
		t.Fatalf("request: %+v", r)
	}
	if code, out := runRequest(env, "port", "3000", "--why=dev server"); code != 0 {
		t.Fatalf("port request: exit %d: %s", code, out)
	}
	// The short form the broker's 403 names: corral-request HOST --why.
	if code, out := runRequest(env, "pkg.example.test", "--why", "the build downloads from it"); code != 0 || !strings.Contains(out, "asked the user for egress to pkg.example.test") {
		t.Fatalf("short form: exit %d: %s", code, out)
	}
	for _, args := range [][]string{
		{"egress", "*.example.test", "--why", "x"}, // refused by the broker (400)
		{"egress", "a.example.test"},               // no reason
		{"grant", "a.example.test", "--why", "x"},  // no such request
		{"egress", "a.example.test", "--why", "x", "--scope", "always"},
		{"--why", "x", "a.example.test"}, // no host first
		{"a.example.test", "b.example.test", "--why", "x"},
	} {
		if code, out := runRequest(env, args...); code == 0 {
			t.Errorf("corral-request %q succeeded: %s", args, out)
		}
	}
	if len(in.Pending()) != 3 {
		t.Fatalf("pending after refusals: %+v", in.Pending())
	}
}

// Without a broker (network = full or offline) there is nobody to ask.
func TestRequestNeedsBroker(t *testing.T) {
	_, env := requestBroker(t, "offline")
	if code, out := runRequest(env, "egress", "a.example.test", "--why", "x"); code != 1 || !strings.Contains(out, "no egress broker") {
		t.Fatalf("offline box: exit %d: %s", code, out)
	}
}
