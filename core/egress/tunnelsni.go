package egress

import (
	"bufio"
	"errors"
	"net"
	"time"
)

// Reasons of a tunnel refused for what its client sent first. They are
// part of the decision log format: do not rename.
const (
	// ReasonSNIMismatch: the TLS ClientHello asks the upstream for a name
	// other than the CONNECT host (domain fronting through an allowed
	// name), or, for a CONNECT to an IP literal, for a name the allow-list
	// does not allow.
	ReasonSNIMismatch Reason = "sni-mismatch"
	// ReasonBadHello: the tunnel starts with a TLS handshake record, but
	// not with a ClientHello the broker reads whole (see readClientHello).
	ReasonBadHello Reason = "tls-hello-malformed"
)

// TLS alerts the broker sends a refused client in place of the upstream's
// answer (RFC 8446 6): its TLS stack reports them ("remote error: tls:
// access denied"); the decision log says why.
const (
	alertAccessDenied = 49
	alertDecodeError  = 50
)

// inspectHello runs before the client -> upstream direction of a CONNECT
// tunnel whose target t was allowed. It waits for the client's first
// byte (upstream -> client runs meanwhile, so protocols whose server
// speaks first work, and the idle rule is the tunnel's own). If that byte
// starts a TLS handshake record, it reads the ClientHello (within
// HeaderTimeout, at most MaxClientHello bytes) and checks its server name
// (sniAllowed). An accepted hello, and any other first bytes, are
// forwarded upstream unchanged before the tunnel relays the rest; a
// refused one is logged as a decision, answered with a TLS alert, and the
// tunnel closed. release gives the connection's reader back once its
// buffered bytes were forwarded.
//
// Only the first flight is read: a protocol that turns to TLS later
// (STARTTLS) is not inspected, and nothing inside TLS (an HTTP Host
// header) can be; docs/SECURITY.md says what this does and does not prove.
func (s *Server) inspectHello(ts *tunnelState, br *bufio.Reader, t target, release func()) bool {
	nc, up := ts.conns[0], ts.conns[1]
	defer release()
	for {
		nc.SetReadDeadline(time.Now().Add(s.cfg.IdleTimeout)) //nolint:errcheck
		_, err := br.Peek(1)
		if err == nil {
			break
		}
		if !isTimeout(err) || errors.Is(err, net.ErrClosed) {
			// EOF or a closed connection before any byte: nothing is
			// buffered, and the relay sees the same end.
			return true
		}
		// The idle rule of pipe: a period with no byte from the client
		// pokes the other direction; poked in turn, both were idle.
		if ts.poked[0].Swap(false) || ts.done[1].Load() {
			return false
		}
		ts.poked[1].Store(true)
		up.SetReadDeadline(aLongTimeAgo) //nolint:errcheck
	}
	var raw []byte
	first, _ := br.Peek(1)
	if first[0] == recordHandshake {
		nc.SetReadDeadline(time.Now().Add(s.cfg.HeaderTimeout)) //nolint:errcheck
		hello, sni, err := readClientHello(br)
		if err != nil {
			if isTimeout(err) || !errors.As(err, new(*HelloError)) {
				return false // too slow, or gone, mid-hello
			}
			s.refuseHello(nc, t, ReasonBadHello, "", alertDecodeError)
			return false
		}
		if !s.sniAllowed(t.auth, sni) {
			s.refuseHello(nc, t, ReasonSNIMismatch, sni, alertAccessDenied)
			return false
		}
		raw = hello
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		raw = append(raw, b...)
	}
	nc.SetReadDeadline(time.Time{}) //nolint:errcheck // pipe sets its own
	if len(raw) > 0 {
		up.SetWriteDeadline(time.Now().Add(s.cfg.IdleTimeout)) //nolint:errcheck
		if _, err := up.Write(raw); err != nil {
			return false
		}
	}
	return true
}

// sniAllowed decides a ClientHello's server name (canonical, "" when it
// has none) for a tunnel to auth:
//
//   - no name: allowed. A client that sends none (non-web TLS, a hello
//     whose only name is inside ECH) tells the upstream no name either,
//     so it can front nothing by SNI. ECH's outer name is a name like any
//     other and must match.
//   - a CONNECT to a name: the server name must be that name (both are
//     canonical: lowercase, no trailing dot).
//   - a CONNECT to an IP literal (allowed only by an explicit range): the
//     name must itself be allowed on that port by the current policy, as
//     if the client had asked for it by name.
func (s *Server) sniAllowed(auth Authority, sni string) bool {
	switch {
	case sni == "":
		return true
	case !auth.IP.IsValid():
		return sni == auth.Host
	}
	return s.policy.Load().Decide(Request{Kind: KindConnect, Host: sni, Port: auth.Port}).Allowed
}

// refuseHello logs the refusal of a tunnel's first flight and answers the
// client with a fatal TLS alert.
func (s *Server) refuseHello(nc net.Conn, t target, r Reason, sni string, alert byte) {
	d := t.d
	d.Time, d.Allowed, d.Reason, d.Held = time.Now(), false, r, 0
	d.SNI = sni
	s.logDecision(d)
	s.logger.Info("egress tunnel refused after its ClientHello", "host", t.auth.Host, "reason", r, "sni", capText(sni))
	nc.SetWriteDeadline(time.Now().Add(s.cfg.HeaderTimeout))    //nolint:errcheck
	nc.Write([]byte{0x15, 0x03, 0x03, 0x00, 0x02, 0x02, alert}) //nolint:errcheck // closed next either way
}
