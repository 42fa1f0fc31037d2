// Package brokertest holds what tests of a running broker share: a
// resolver that keeps every name on loopback, a loopback upstream on a port
// no box may reach, and a GET through the proxy. The tests of core/broker
// (the policy), the CLI (flags, process, guest-conn) and core/funnel use
// the same ones, so that a fix to one reaches all.
package brokertest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/egress"
)

// Resolver maps every *.example.test name to 127.0.0.1 and fails for
// anything else: tests never reach anything but loopback.
type Resolver struct{}

// LookupIPAddr implements the broker's resolver.
func (Resolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if strings.HasSuffix(host, ".example.test") {
		return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// ProxyGet fetches target through the proxy at addr and returns the status
// and the egress reason header.
func ProxyGet(t testing.TB, addr, target string) (int, string) {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(target)
	if err != nil {
		t.Fatalf("GET %s via %s: %v", target, addr, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	return resp.StatusCode, resp.Header.Get("X-Corral-Egress-Reason")
}

// Upstream starts an HTTP server on 127.0.0.1, outside the broker ports,
// that answers "hello from HOST", until the test ends; it returns its port.
func Upstream(t testing.TB) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from", r.Host)
	}))
	srv.Listener.Close()
	srv.Listener = ListenOutsideBrokerPorts(t)
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// ListenOutsideBrokerPorts listens on 127.0.0.1 on a port outside the
// broker port range, which no box reaches on the host whatever its ranges
// allow (the kernel's ephemeral ports include that range).
func ListenOutsideBrokerPorts(t testing.TB) net.Listener {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		if !egress.IsBrokerPort(ln.Addr().(*net.TCPAddr).Port) {
			return ln
		}
		defer ln.Close() // held until a port outside is found
	}
}
