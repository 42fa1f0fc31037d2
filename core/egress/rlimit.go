package egress

import "golang.org/x/sys/unix"

// fdReserve is the number of descriptors the broker keeps out of the tunnel
// budget: its listener, log files, resolver sockets, idle upstream
// connections of the HTTP forwarder, and connections that are being answered
// (denials, 503s) while every tunnel slot is taken.
const fdReserve = 128

// RaiseFileLimit raises the soft RLIMIT_NOFILE to the hard limit (on macOS
// at most OPEN_MAX-like values the kernel accepts) and returns the soft
// limit now in force, or 0 if it could not be read. The Go runtime already
// does this at start on most systems; doing it here makes the number the
// tunnel cap is derived from certain.
func RaiseFileLimit() uint64 {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		want := lim
		want.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
			// macOS refuses RLIM_INFINITY as a soft limit; try its usual
			// per-process maximum.
			want.Cur = min(lim.Max, 10240)
			if unix.Setrlimit(unix.RLIMIT_NOFILE, &want) != nil {
				return lim.Cur
			}
		}
		lim.Cur = want.Cur
	}
	return lim.Cur
}

// TunnelCap is the number of concurrent tunnels that fit in soft open
// files. A tunnel holds two sockets (the client's and the upstream); the
// splice pipes that move its bytes come from a pool capped at
// [PipeCap](soft) pipes of two descriptors, shared by all tunnels and
// counted apart; [fdReserve] stay free so that a client past the cap can
// still be accepted and answered 503 at once, and denials keep being
// answered. An unknown limit (0) gives [DefaultMaxTunnels]; the result is
// never below 8.
func TunnelCap(soft uint64) int {
	if soft == 0 {
		return DefaultMaxTunnels
	}
	if soft > 1<<20 {
		soft = 1 << 20
	}
	n := (int(soft) - fdReserve - 2*PipeCap(soft)) / 2
	return max(n, 8)
}
