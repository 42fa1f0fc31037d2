// Package guestconn is what qemu runs for each guest connection to the
// broker under the host funnel (core/funnel): `EXE guest-conn BOX` with the
// connection on its stdin passes that socket to the box's broker over a
// Unix socket (SCM_RIGHTS) and exits; no byte of the connection passes
// through it.
//
// It runs once per guest connection, so it must cost as little as a process
// can (issue 18: at most 3 ms of CPU). The package imports only the
// standard library (no net: raw socket calls) and core/paths, so that the
// small program cmd/corral-guest-conn, installed beside corral, links
// nothing else and initialises almost nothing. EXE is that program when it
// is installed there ([Exe]), else corral itself, which dispatches the same
// command before building anything (cmd/corral/cli). Both take the same
// arguments, so the guestfwd rule and its check (funnel.CheckArgs) are the
// same whichever runs.
package guestconn

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// Command is the subcommand qemu runs per guest connection.
const Command = "guest-conn"

// Binary is the name of the small program that runs only Command,
// installed in the same directory as corral.
const Binary = "corral-guest-conn"

// Exe returns the program qemu runs per guest connection for the corral
// binary at corralExe (an absolute path without symbolic links): Binary in
// the same directory when it is an executable regular file there, else
// corralExe. Only that directory is looked in: the program gets the guest's
// connection, so it must come from where corral itself was installed.
func Exe(corralExe string) string {
	p := filepath.Join(filepath.Dir(corralExe), Binary)
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p
	}
	return corralExe
}

// Main runs `guest-conn BOX` for args, the command line without argv[0]
// (args[0] is Command), with the connection on stdin and the state
// directory from the environment (paths.Default). It prints nothing
// (stdout and stderr are the guest connection too) and returns the exit
// code: 2 for a bad command line, 1 when the connection could not be
// passed (the reason goes to the box's broker log), else 0.
func Main(args []string) int {
	if len(args) != 2 || args[0] != Command || args[1] == "" {
		return 2
	}
	l, err := paths.Default()
	if err != nil {
		return 1
	}
	if Run(l, args[1], os.Stdin) != nil {
		return 1
	}
	return 0
}

// Run passes conn, which must be a socket, to the broker of box in layout
// l. A failure is also appended to the box's broker log, where a user
// looking into a guest's failed connections finds it; the guest sees its
// connection close.
func Run(l paths.Layout, box string, conn *os.File) error {
	fd := int(conn.Fd())
	var err error
	if !IsSocket(fd) {
		// qemu's guestfwd cmd: gives a socketpair end (measured with QEMU
		// 7.2 / libslirp 4.7); anything else is not a guest connection.
		err = errors.New("stdin is not a socket")
	} else {
		err = SendFD(l.BrokerSocket(box), fd)
	}
	if err != nil && l.Home != "" {
		// Regular files only, never blocking (a FIFO in the log's place).
		if lf, lerr := untrusted.OpenFile(l.BrokerLog(box), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); lerr == nil {
			lf.WriteString(time.Now().Format(time.RFC3339) + " corral guest-conn: box " + box + ": " + err.Error() + "\n") //nolint:errcheck // best effort
			lf.Close()
		}
	}
	return err
}

// sendTimeout bounds connecting to the broker's socket (a full backlog)
// and sending the descriptor.
const sendTimeout = 5 * time.Second

// SendFD passes fd (a connected stream socket, such as the guest connection
// qemu hands guest-conn on its stdin) to the listener at path with
// SCM_RIGHTS. No byte of the connection passes through the caller, which
// may exit as soon as SendFD returns: the receiver holds its own copy.
//
// It uses plain system calls rather than package net: a process that passes
// one descriptor and exits needs no poller, and net's start-up is a
// measurable share of a guest connection's cost.
func SendFD(path string, fd int) error {
	s, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return wrap(path, err)
	}
	defer syscall.Close(s)
	syscall.CloseOnExec(s)
	// Both calls block (connect while the listener's backlog is full); the
	// send timeout bounds both on Unix sockets.
	tv := syscall.NsecToTimeval(sendTimeout.Nanoseconds())
	if err := syscall.SetsockoptTimeval(s, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		return wrap(path, err)
	}
	if err := retryEINTR(func() error { return syscall.Connect(s, &syscall.SockaddrUnix{Name: path}) }); err != nil {
		return wrap(path, err)
	}
	rights := syscall.UnixRights(fd)
	if err := retryEINTR(func() error { return syscall.Sendmsg(s, []byte{0}, rights, nil, 0) }); err != nil {
		return wrap(path, err)
	}
	return nil
}

// retryEINTR runs call again while a signal interrupted it: with a socket
// timeout set, Linux fails connect and sendmsg with EINTR even for handlers
// installed with SA_RESTART, as Go's are.
func retryEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

func wrap(path string, err error) error {
	return &os.PathError{Op: "passing the guest connection to", Path: path, Err: err}
}

// IsSocket reports whether fd is a socket (qemu's guestfwd cmd: hands the
// command one end of a socketpair on fds 0, 1 and 2).
func IsSocket(fd int) bool {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return false
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFSOCK
}
