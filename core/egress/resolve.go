package egress

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// resolveTTL is how long a successful lookup of a name is reused. Go's
// resolver gives no TTLs; a few seconds is what its own /etc/hosts cache
// keeps, and it spares a burst of connections to one host (a package
// manager's downloads) a lookup each, and with it the goroutine and the
// wake-ups Go's resolver spends per lookup (issue 18: the CONNECT path's
// profile). Only the answer is reused: every address is checked again
// against the policy and the broker's own sockets for every request, as
// [Server.check] says. Failures are never cached.
const resolveTTL = 5 * time.Second

// maxResolveCache bounds the names cached; when it is full the cache is
// emptied and starts again (a box that asks for many names pays a lookup
// each, as without a cache).
const maxResolveCache = 1024

type resolveCache struct {
	mu sync.Mutex
	m  map[string]resolved
}

type resolved struct {
	addrs []netip.Addr // never modified after it is stored
	at    time.Time
}

// lookup returns the addresses of host (unmapped), from the cache while
// its answer is younger than resolveTTL, else from r; nil if none.
func (c *resolveCache) lookup(ctx context.Context, r Resolver, timeout time.Duration, host string) []netip.Addr {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.m[host]
	c.mu.Unlock()
	if ok && now.Sub(e.at) < resolveTTL && now.Sub(e.at) >= 0 {
		return e.addrs
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	res, err := r.LookupIPAddr(rctx, host)
	cancel()
	if err != nil {
		return nil
	}
	addrs := make([]netip.Addr, 0, len(res))
	for _, a := range res {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			// Unmap: a v4 answer comes back as a 16-byte slice, and a
			// v4-mapped AAAA record reaches the v4 address anyway.
			addrs = append(addrs, ip.Unmap())
		}
	}
	if len(addrs) == 0 {
		return nil
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxResolveCache {
		c.m = make(map[string]resolved)
	}
	c.m[host] = resolved{addrs: addrs, at: now}
	c.mu.Unlock()
	return addrs
}
