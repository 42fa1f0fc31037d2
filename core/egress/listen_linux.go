package egress

import "syscall"

// deferAccept sets TCP_DEFER_ACCEPT: the kernel hands a connection to
// accept only once its first data arrived (or, for a silent client, after
// about this many seconds of SYN-ACK retransmits), so the handler's first
// read finds the request head instead of parking on an empty socket.
func deferAccept(fd int) error {
	return syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_DEFER_ACCEPT, deferAcceptSeconds)
}

const deferAcceptSeconds = 1
