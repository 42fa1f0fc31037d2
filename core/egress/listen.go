package egress

import (
	"context"
	"net"
	"syscall"
)

// Listen opens the broker's TCP listener on addr (a loopback address; Serve
// refuses any other). Accepted connections get no TCP keep-alive: the peer
// is a process on this host (Lima's host agent, a host tool), which the
// kernel closes for if it dies, and a silent tunnel is ended by the idle
// timeout anyway; Go's default costs four setsockopt calls per connection.
// Where the system has it, the listener defers accepting a connection until
// its first bytes arrived (see deferAccept), which saves a wake-up per
// connection: every client of a proxy speaks first.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) { serr = deferAccept(int(fd)) }); err != nil {
			return err
		}
		return serr
	}}
	return lc.Listen(ctx, "tcp", addr)
}
