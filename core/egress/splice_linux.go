package egress

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// maxSplice is the most one splice(2) call moves, and the size asked for
// each pipe (the default /proc/sys/fs/pipe-max-size), as in the runtime.
const maxSplice = 1 << 20

func newPipe() (spipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return spipe{}, err
	}
	unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, maxSplice) //nolint:errcheck // a smaller pipe works, with more calls
	return spipe{r: fds[0], w: fds[1]}, nil
}

func closePipe(p spipe) {
	unix.Close(p.r) //nolint:errcheck
	unix.Close(p.w) //nolint:errcheck
}

// copyChunk moves at most limit bytes from src to dst, as io.Copy of an
// *io.LimitedReader would (nil error at EOF or at the limit; deadlines
// apply), through a pooled pipe with splice(2) when both are TCP
// connections, else through user space.
func (s *Server) copyChunk(dst, src net.Conn, limit int64) (int64, error) {
	d, ok1 := dst.(*net.TCPConn)
	c, ok2 := src.(*net.TCPConn)
	if !ok1 || !ok2 {
		return userCopy(dst, src, limit)
	}
	return s.spliceChunk(d, c, limit)
}

// spliceChunk is copyChunk over splice. The pipe is taken when the source
// has bytes and given back (empty) whenever it has none, so a direction
// waiting for its peer holds no pipe; a pipe left holding bytes by a
// failed write is closed, never pooled. With no pipe to be had the rest of
// the chunk goes through user space.
func (s *Server) spliceChunk(dst, src *net.TCPConn, limit int64) (written int64, err error) {
	srcRC, err := src.SyscallConn()
	if err != nil {
		return 0, err
	}
	dstRC, err := dst.SyscallConn()
	if err != nil {
		return 0, err
	}
	var p spipe
	have := false
	defer func() {
		if have {
			s.pipes.put(p, true)
		}
	}()
	for written < limit {
		var n int64
		var serr error
		fallback := false
		rerr := srcRC.Read(func(fd uintptr) bool {
			if !have {
				if p, have = s.pipes.get(); !have {
					fallback = true
					return true
				}
			}
			for {
				n, serr = unix.Splice(int(fd), nil, p.w, nil, int(min(limit-written, maxSplice)), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if serr != unix.EINTR {
					break
				}
			}
			if serr == unix.EAGAIN { // nothing to read: wait without the pipe
				s.pipes.put(p, true)
				have = false
				return false
			}
			return true
		})
		if rerr != nil {
			return written, rerr
		}
		if fallback {
			m, err := userCopy(dst, src, limit-written)
			return written + m, err
		}
		if serr != nil {
			return written, os.NewSyscallError("splice", serr)
		}
		if n == 0 {
			return written, nil // EOF
		}
		left := int(n)
		werr := dstRC.Write(func(fd uintptr) bool {
			for left > 0 {
				m, e := unix.Splice(p.r, nil, int(fd), nil, left, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				switch {
				case e == unix.EINTR:
				case m > 0:
					left -= int(m)
					written += m
				case e == unix.EAGAIN:
					return false
				default:
					serr = e
					return true
				}
			}
			return true
		})
		if left > 0 {
			s.pipes.put(p, false)
			have = false
		}
		if werr != nil {
			return written, werr
		}
		if serr != nil {
			return written, os.NewSyscallError("splice", serr)
		}
	}
	return written, nil
}
