//go:build linux && (amd64 || arm64)

package namerule

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Supported reports whether this build can enforce the rule.
const Supported = true

// listenerFD is the descriptor the supervisor gets its socket on.
const listenerFD = 3

// Start starts the supervisor (exe, which must dispatch Command to Main)
// and installs the filter on the calling thread, which it locks: the
// caller must exec qemu from this goroutine next, with nothing trapped in
// between (the filter is on this thread only, and qemu inherits it). The
// supervisor is started before the filter, so it is outside it; it
// answers once it holds the listener, or Start fails.
func Start(exe string, rule Rule, stderr io.Writer) error {
	runtime.LockOSThread()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("name rule: socket pair: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "name-rule"), os.NewFile(uintptr(pair[1]), "name-rule")
	defer ours.Close()
	cmd := exec.Command(exe, append([]string{Command}, rule.Args()...)...)
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		theirs.Close()
		return fmt.Errorf("name rule: starting the supervisor: %w", err)
	}
	theirs.Close()
	fail := func(err error) error {
		cmd.Process.Kill()
		return err
	}
	listener, err := Install()
	if err != nil {
		return fail(fmt.Errorf("name rule: %w", err))
	}
	rights := unix.UnixRights(listener)
	err = unix.Sendmsg(pair[0], []byte{'L'}, rights, nil, 0)
	unix.Close(listener)
	if err != nil {
		return fail(fmt.Errorf("name rule: handing the listener to the supervisor: %w", err))
	}
	tv := unix.NsecToTimeval((10 * time.Second).Nanoseconds())
	if err := unix.SetsockoptTimeval(pair[0], unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fail(fmt.Errorf("name rule: %w", err))
	}
	ack := make([]byte, 1)
	if n, err := unix.Read(pair[0], ack); err != nil || n != 1 || ack[0] != 'K' {
		return fail(fmt.Errorf("name rule: the supervisor did not take the listener (%d bytes, %v)", n, err))
	}
	return nil
}

// Main is the supervisor: it takes the listener from the socket the qemu
// wrapper's stage left at descriptor 3, acknowledges it, and answers the
// filter's notifications until qemu and its children have exited.
// Refusals go to stderr (Lima keeps qemu's stderr in ha.stderr.log) and
// to record.
func Main(args []string, stderr io.Writer, record func(Refusal)) int {
	rule, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "corral %s: %v\n", Command, err)
		return 2
	}
	listener, err := receiveListener(listenerFD)
	if err != nil {
		fmt.Fprintf(stderr, "corral %s: box %s: %v\n", Command, rule.Box, err)
		return 1
	}
	s := NewSupervisor(listener, rule)
	s.Report = Reporter(stderr, rule.Box, record)
	if err := s.Run(); err != nil {
		fmt.Fprintf(stderr, "corral %s: box %s: %v\n", Command, rule.Box, err)
		return 1
	}
	return 0
}

func receiveListener(sock int) (int, error) {
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 1 || buf[0] != 'L' {
		return -1, fmt.Errorf("receiving the seccomp listener: %d bytes, %v", n, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("receiving the seccomp listener: %d control messages, %v", len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, errors.New("receiving the seccomp listener: no descriptor")
	}
	if _, err := unix.Write(sock, []byte{'K'}); err != nil {
		unix.Close(fds[0])
		return -1, fmt.Errorf("acknowledging the seccomp listener: %w", err)
	}
	unix.Close(sock)
	return fds[0], nil
}

// Reporter writes the first refusals of each distinct path to w and hands
// them to record (the audit log), then only every 1000th: a box that
// loops on a refused call cannot fill the host's disk.
func Reporter(w io.Writer, box string, record func(Refusal)) func(Refusal) {
	const firstLines = 32
	var (
		mu    sync.Mutex
		seen  = map[string]bool{}
		count int
	)
	return func(r Refusal) {
		mu.Lock()
		defer mu.Unlock()
		count++
		key := r.Call + "\x00" + r.At
		if (len(seen) < firstLines && !seen[key]) || count%1000 == 0 {
			seen[key] = true
			fmt.Fprintf(w, "corral qemu: box %s: refused %s: %s: %s (%d refused so far)\n", box, r.Call, r.Why, strconv.QuoteToASCII(r.At), count)
			if record != nil {
				record(r)
			}
		}
	}
}

// Verify checks that the qemu at pid runs under the rule: its status says
// seccomp filter mode with no_new_privs, and a supervisor (a child whose
// command line is Command) is alive outside any filter. It returns the
// supervisor's pid.
func Verify(pid int) (int, error) {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading qemu's status: %w", err)
	}
	if !strings.Contains(string(st), "\nSeccomp:\t2\n") || !strings.Contains(string(st), "\nNoNewPrivs:\t1\n") {
		return 0, errors.New("qemu runs without the name rule's filter (started before corral had it, or by hand)")
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
		for _, c := range strings.Fields(string(b)) {
			cl, _ := os.ReadFile("/proc/" + c + "/cmdline")
			args := strings.Split(string(cl), "\x00")
			if len(args) < 2 || args[1] != Command {
				continue
			}
			cst, _ := os.ReadFile("/proc/" + c + "/status")
			if !strings.Contains(string(cst), "\nSeccomp:\t0\n") {
				return 0, errors.New("the name rule's supervisor runs under a filter")
			}
			n, _ := strconv.Atoi(c)
			return n, nil
		}
	}
	return 0, errors.New("qemu has the filter but its supervisor is gone: every change to the project fails")
}
