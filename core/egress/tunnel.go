package egress

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnelChunk is how much one copyChunk call may move before the copy loop
// looks at the idle state again. On Linux copyChunk splices between TCP
// connections through the server's own pipe pool (see pipePool), not the
// runtime's.
const tunnelChunk = 4 << 20

// copyBufs are the buffers of user-space copies (a tunnel direction that
// found no pipe, or a connection that is not TCP).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// userCopy moves at most limit bytes from src to dst through a buffer,
// with io.Copy's results (nil error at EOF), never through dst's ReadFrom
// or src's WriteTo: those would splice through the runtime's pipe pool.
func userCopy(dst, src net.Conn, limit int64) (written int64, err error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	for written < limit {
		n, rerr := src.Read(buf[:min(int64(len(buf)), limit-written)])
		if n > 0 {
			m, werr := dst.Write(buf[:n])
			written += int64(m)
			if werr != nil {
				return written, werr
			}
			if m < n {
				return written, io.ErrShortWrite
			}
		}
		if rerr == io.EOF {
			return written, nil
		}
		if rerr != nil {
			return written, rerr
		}
	}
	return written, nil
}

// aLongTimeAgo is a deadline in the past, used to wake a blocked read.
var aLongTimeAgo = time.Unix(1, 0)

// tunnel relays bytes between the client and upstream until both sides are
// done, half-closing each direction as it ends so that protocols that shut
// down their write side (TLS close_notify then FIN) work.
//
// Idle detection without giving up splice: each direction copies in chunks
// under a read deadline of IdleTimeout. A direction whose whole period passed
// without a byte does not decide alone (the other direction may be busy in a
// chunk of its own): it marks the other direction "poked" and wakes it with a
// past read deadline. A poked direction that wakes with no bytes moved in the
// last period means both were silent, and the tunnel is closed; if it moved
// bytes it just carries on. Write deadlines only catch a peer that stopped
// reading (see pipe); they end the tunnel.
//
// first, when set, runs before the client -> upstream direction starts
// (upstream -> client already runs, so a server that speaks first is
// heard): it may forward the client's first bytes itself, and returning
// false ends the tunnel instead (see inspectHello).
func (s *Server) tunnel(client, up net.Conn, first func(*tunnelState) bool) {
	t := &tunnelState{idle: s.cfg.IdleTimeout, conns: [2]net.Conn{client, up}, copy: s.copyChunk}
	done := make(chan struct{})
	s.workers.run(func() {
		if first == nil || first(t) {
			t.pipe(0) // client -> upstream
		} else {
			t.closeBoth()
		}
		close(done)
	})
	t.pipe(1) // upstream -> client
	<-done
	client.Close()
	up.Close()
}

type tunnelState struct {
	idle      time.Duration
	conns     [2]net.Conn // conns[dir] is the source of direction dir
	poked     [2]atomic.Bool
	done      [2]atomic.Bool // direction ended with EOF and half-closed
	closeOnce sync.Once
	copy      func(dst, src net.Conn, limit int64) (int64, error)
}

func (t *tunnelState) closeBoth() {
	t.closeOnce.Do(func() {
		t.conns[0].Close()
		t.conns[1].Close()
	})
}

func (t *tunnelState) pipe(dir int) {
	src, dst := t.conns[dir], t.conns[1-dir]
	lastActive := time.Now()
	for {
		// The write deadline is a full period later than the read deadline:
		// when it fires, splice has already taken bytes from src that it can
		// no longer deliver, so a write timeout must end the tunnel, and it
		// must never fire merely because a read waited until its deadline.
		readBy := time.Now().Add(t.idle)
		writeBy := readBy.Add(t.idle)
		src.SetReadDeadline(readBy)   //nolint:errcheck
		dst.SetWriteDeadline(writeBy) //nolint:errcheck
		n, err := t.copy(dst, src, tunnelChunk)
		wasPoked := t.poked[dir].Swap(false)
		if n > 0 {
			lastActive = time.Now()
		}
		switch {
		case err == nil && n == tunnelChunk:
			continue
		case err == nil: // EOF from src
			t.done[dir].Store(true)
			closeWrite(dst)
			return
		case !isTimeout(err) || errors.Is(err, net.ErrClosed) || !time.Now().Before(writeBy):
			t.closeBoth()
			return
		case n > 0 || time.Since(lastActive) < t.idle:
			continue // moved bytes within the last period
		case wasPoked || t.done[1-dir].Load():
			t.closeBoth() // the other direction was idle first (or is finished), and so are we
			return
		default:
			t.poked[1-dir].Store(true)
			t.conns[1-dir].SetReadDeadline(aLongTimeAgo) //nolint:errcheck
		}
	}
}

func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	c.Close()
}
