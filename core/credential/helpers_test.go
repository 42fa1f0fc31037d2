package credential

import (
	"context"
	"crypto/x509"
	"net"
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
func TestPlanHasOneCaller(t *testing.T) {
	callers := grepRepo(t, "credential.Plan(")
	if len(callers) != 1 || !strings.HasSuffix(callers[0], "core/broker/credentials.go") {
		t.Errorf("credential.Plan is called from %v; only core/broker/credentials.go may plan", callers)
	}
	if got := grepRepo(t, "boxCredentials("); len(got) != 1 || !strings.HasSuffix(got[0], "core/broker/broker.go") {
		t.Errorf("boxCredentials is called from %v", got)
	}
}
