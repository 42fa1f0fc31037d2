//go:build !linux

package egress

import (
	"errors"
	"net"
)

func newPipe() (spipe, error) { return spipe{}, errors.New("no splice(2) on this system") }

func closePipe(spipe) {}

// copyChunk moves at most limit bytes from src to dst, as io.Copy of an
// *io.LimitedReader would, through user space.
func (s *Server) copyChunk(dst, src net.Conn, limit int64) (int64, error) {
	return userCopy(dst, src, limit)
}
