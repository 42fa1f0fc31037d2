package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// countingResolver answers every name with 127.0.0.1 (failing for
// "fail.test") and counts the lookups.
type countingResolver struct{ n atomic.Int64 }

func (r *countingResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.n.Add(1)
	if host == "fail.test" {
		return nil, errors.New("no such host")
	}
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

func TestResolveCache(t *testing.T) {
	var c resolveCache
	r := &countingResolver{}
	ctx := context.Background()
	want := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	for range 3 {
		if got := c.lookup(ctx, r, time.Second, "a.test"); len(got) != 1 || got[0] != want[0] {
			t.Fatalf("lookup = %v, want %v (unmapped)", got, want)
		}
	}
	if n := r.n.Load(); n != 1 {
		t.Errorf("%d lookups for three requests within the TTL, want 1", n)
	}
	// An answer past its TTL is looked up again.
	c.mu.Lock()
	e := c.m["a.test"]
	e.at = e.at.Add(-resolveTTL)
	c.m["a.test"] = e
	c.mu.Unlock()
	c.lookup(ctx, r, time.Second, "a.test")
	if n := r.n.Load(); n != 2 {
		t.Errorf("%d lookups after the TTL, want 2", n)
	}
	// Failures are never cached.
	for range 2 {
		if got := c.lookup(ctx, r, time.Second, "fail.test"); got != nil {
			t.Fatalf("failed lookup = %v", got)
		}
	}
	if n := r.n.Load(); n != 4 {
		t.Errorf("%d lookups after two failures, want 4", n)
	}
	// The cache stays bounded.
	for i := range maxResolveCache + 10 {
		c.lookup(ctx, r, time.Second, "n"+strconv.Itoa(i)+".test")
	}
	if n := len(c.m); n > maxResolveCache {
		t.Errorf("%d names cached, more than %d", n, maxResolveCache)
	}
}

// TestResolveCacheStillChecksAddresses: a cached answer is checked again
// for every request; here the policy changes to one that denies the
// private address between two requests within the TTL.
func TestResolveCacheStillChecksAddresses(t *testing.T) {
	r := &countingResolver{}
	p := startProxy(t, []string{"allowed.test:*"}, []string{"127.0.0.0/8"}, func(c *Config) { c.Resolver = r })
	ep := portOf(t, echoServer(t))
	status, c, _, _ := rawConnect(t, p.addr, "allowed.test:"+ep)
	if status != 200 {
		t.Fatalf("first CONNECT: %d", status)
	}
	c.Close()
	p.srv.SetPolicy(mustPolicy(t, []string{"allowed.test:*"}, nil))
	if status, _, _, _ := rawConnect(t, p.addr, "allowed.test:"+ep); status != 403 {
		t.Errorf("second CONNECT without the range, within the TTL: %d, want 403", status)
	}
	if d := p.log.last(); d.Reason != ReasonPrivateIP {
		t.Errorf("reason %q, want %q", d.Reason, ReasonPrivateIP)
	}
	if n := r.n.Load(); n != 1 {
		t.Errorf("%d lookups, want 1 (the second answer came from the cache)", n)
	}
}
