package credential

import (
	"context"
	"crypto/x509"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/egress"
)

type x509Pool = x509.CertPool

// loopbackResolver resolves nothing: the tests' upstreams are IP literals.
type loopbackResolver struct{}

func (loopbackResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
}

// startServer serves b on 127.0.0.1 with the listener's address as the
// broker's own, and returns that address.
func startServer(t *testing.T, b *egress.CredentialBroker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := egress.NewServer(egress.Config{Credentials: b, SelfAddrs: []string{ln.Addr().String()},
		Resolver: loopbackResolver{}, ShutdownGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// Only the box's broker plans: no other package calls Plan, and the
// broker calls it once per process (core/broker boxCredentials, called
// once by runBox). A second planner could disagree with the broker.
// Inside this package only the laptop's relay plans (StartRelay): it
// plans what the laptop holds for a session on a remote host, where the
// remote broker plans what that host holds.
func TestPlanHasOneCaller(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") || e.Name() == "relay.go" {
			continue
		}
		b, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if l := strings.TrimSpace(line); strings.Contains(l, "Plan(") && !strings.HasPrefix(l, "func ") && !strings.HasPrefix(l, "//") {
				t.Errorf("%s calls Plan: %s", e.Name(), l)
			}
		}
	}
	callers := grepRepo(t, "credential.Plan(")
	if len(callers) != 1 || !strings.HasSuffix(callers[0], "core/broker/credentials.go") {
		t.Errorf("credential.Plan is called from %v; only core/broker/credentials.go may plan", callers)
	}
	if got := grepRepo(t, "boxCredentials("); len(got) != 1 || !strings.HasSuffix(got[0], "core/broker/broker.go") {
		t.Errorf("boxCredentials is called from %v", got)
	}
}
