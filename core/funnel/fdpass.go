package funnel

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// Listener receives connections passed with guestconn.SendFD on a Unix socket and
// returns them from Accept, as a net.Listener for egress.Server.Serve.
type Listener struct {
	ln     *net.UnixListener
	logger *slog.Logger
	conns  chan net.Conn
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

var _ net.Listener = (*Listener)(nil)

// maxFDs bounds the descriptors read from one message; guestconn.SendFD sends one.
const maxFDs = 4

// ListenSocket listens on the Unix socket path with mode 0600 (keep it in
// a 0700 directory), for a broker's private sockets: a stale socket at
// path is replaced; a live one (another broker of the same box) or any
// other file there is an error. what starts every error message.
func ListenSocket(path, what string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSocket == 0 {
			return nil, fmt.Errorf("%s on %s: a file that is not a socket is in the way", what, path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s on %s: another process is listening there", what, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("%s: removing stale socket %s: %w", what, path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("%s on %s: %w", what, path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("%s: securing %s: %w", what, path, err)
	}
	return ln, nil
}

// Listen listens on the Unix socket path (mode 0600; keep it in a 0700
// directory: whoever can connect can hand the broker connections). A stale
// socket at path is replaced; a live one or any other file there is an
// error.
func Listen(path string, logger *slog.Logger) (*Listener, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := ListenSocket(path, "listening for guest connections")
	if err != nil {
		return nil, err
	}
	l := &Listener{ln: ln, logger: logger, conns: make(chan net.Conn), done: make(chan struct{})}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	var backoff time.Duration
	for {
		uc, err := l.ln.AcceptUnix()
		if err != nil {
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.logger.Warn("accepting on the guest connection socket; retrying", "err", err, "backoff", backoff)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.receive(uc)
		}()
	}
}

// receive reads one message from a sender and hands on every socket in it.
func (l *Listener) receive(uc *net.UnixConn) {
	defer uc.Close()
	_ = uc.SetReadDeadline(time.Now().Add(5 * time.Second))
	oob := make([]byte, syscall.CmsgSpace(4*maxFDs))
	_, oobn, _, _, err := uc.ReadMsgUnix(make([]byte, 1), oob)
	if errors.Is(err, io.EOF) {
		return // a probe (Listen checking for a live listener)
	}
	if err != nil {
		l.logger.Warn("receiving a guest connection", "err", err)
		return
	}
	msgs, err := syscall.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		l.logger.Warn("receiving a guest connection", "err", err)
		return
	}
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			f := os.NewFile(uintptr(fd), "guest-conn")
			c, err := net.FileConn(f) // dups fd; a non-socket fails here
			f.Close()
			if err != nil {
				l.logger.Warn("receiving a guest connection: not a socket", "err", err)
				continue
			}
			select {
			case l.conns <- c:
			case <-l.done:
				c.Close()
			}
		}
	}
}

// Accept returns the next passed connection; after Close it returns
// net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, fmt.Errorf("accepting guest connections on %s: %w", l.ln.Addr(), net.ErrClosed)
	}
}

// Close stops listening and removes the socket. Connections already
// returned by Accept are the caller's.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.ln.Close()
	})
	return err
}

// Wait blocks until every receiving goroutine has ended after Close.
func (l *Listener) Wait() { l.wg.Wait() }

// Addr is the Unix socket's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }
