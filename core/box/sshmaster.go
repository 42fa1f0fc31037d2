package box

import (
	"context"
	"errors"
	"fmt"
	"github.com/corral-dev/corral/core/untrusted"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/lima"
	"golang.org/x/sys/unix"
)

// corral's own ssh master, one per running box.
//
// Sessions are multiplexed channels over one ssh connection per box: a key
// exchange costs ~90 ms of host CPU and ~1.5 s of wall inside a TCG guest,
// a channel over an open connection a few milliseconds. Lima's own master
// cannot carry the session variables (an OpenSSH master forwards only the
// variables its *own* SendEnv allows, and Lima's has none), so corral runs
// a second one, started with SendEnv=CORRAL_FWD_*:
//
//   - The control socket is Layout.SSHMaster, in a 0700 directory of
//     corral's: whoever can connect to it can open sessions in the box.
//   - The master starts with the first session that finds none listening
//     (under a per-box lock, so two sessions never start two), persists
//     while the box runs, and is closed by Stop and Remove. When the VM
//     goes away its connection drops and the master exits by itself; a
//     dead master's socket is replaced by the next session.
//   - The master's own environment is built from nothing (masterEnviron):
//     it is a long-lived process, and no host variable has any business in
//     it. The variables of a session travel from the session's ssh client
//     to the master over the control socket (the mux protocol), and from
//     there over the ssh channel: never through an argv or a file.
//   - A session whose master is gone by the time it connects falls back to
//     a fresh connection by itself (ssh does that when nothing listens on
//     ControlPath), with the same SendEnv: slower, never less private.

// masterTimeout bounds starting a master (a TCG key exchange takes ~1.6 s).
const masterTimeout = 60 * time.Second

// masterAlive reports whether something listens on the control socket. A
// socket file left by a dead master refuses the connection.
func masterAlive(sock string) bool {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// guestCmd is the ssh process of a non-interactive guest command: the
// test's GuestCommand when it is set, else argv run with env (nil:
// corral's own environment).
func (s *Service) guestCmd(ctx context.Context, argv, env []string) *exec.Cmd {
	if s.GuestCommand != nil {
		return s.GuestCommand(ctx, argv)
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	return cmd
}

// lastLine is the last non-empty line of a command's output, trimmed.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// masterEnviron is the whole environment of a master: what ssh needs to
// find the user's files, nothing else.
func masterEnviron() []string {
	var env []string
	for _, k := range []string{"HOME", "USER", "LOGNAME", "PATH"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// EnsureMaster returns the control socket of the box's ssh master,
// starting the master when none listens.
func (s *Service) EnsureMaster(ctx context.Context, box string) (string, error) {
	sock := s.Layout.SSHMaster(box)
	if masterAlive(sock) {
		return sock, nil
	}
	dir := s.Layout.SSHDir()
	if err := os.MkdirAll(dir, atomicfile.DirMode); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chmod(dir, atomicfile.DirMode); err != nil {
		return "", fmt.Errorf("securing %s: %w", dir, err)
	}
	unlock, err := flockFile(ctx, filepath.Join(dir, box+".lock"), sshMasterLockWait)
	if err != nil {
		return "", fmt.Errorf("locking the ssh master of box %s: %w", box, err)
	}
	defer unlock()
	if masterAlive(sock) { // another session started it while we waited
		return sock, nil
	}
	// ssh refuses to become a master on an existing path (and would then
	// stay in the background as a plain connection): clear the dead one.
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("removing the dead control socket of box %s: %w", box, err)
	}
	argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{})
	if err != nil {
		return "", err
	}
	// Replace the client's ControlMaster/ControlPath pair by the master's;
	// command-line options win over Lima's ssh.config, the first one given
	// wins among command-line options.
	host := argv[len(argv)-1]
	argv = append(argv[:len(argv)-1:len(argv)-1],
		"-o", "ControlMaster=yes", "-o", "ControlPath="+sock, "-o", "ControlPersist=yes",
		"-o", "SendEnv="+SendEnvPattern, "-o", "LogLevel=ERROR",
		"-N", "-f", host)
	// ssh -f forks into the background once authenticated, keeping its
	// stderr: a file (not a pipe, which Wait would wait on forever),
	// unlinked once read.
	errf, err := os.CreateTemp(dir, ".master-err-")
	if err != nil {
		return "", fmt.Errorf("starting the ssh master of box %s: %w", box, err)
	}
	defer errf.Close()
	_ = os.Remove(errf.Name())
	cctx, cancel := context.WithTimeout(ctx, masterTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Env = masterEnviron()
	cmd.Stderr = errf
	// Its own session: a ctrl-C in the terminal of the session that
	// started it must not reach the master that outlives it.
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		msg := make([]byte, 512)
		n, _ := errf.ReadAt(msg, 0)
		return "", fmt.Errorf("starting the ssh master of box %s: %w: %s", box, err, firstLine(strings.TrimSpace(string(msg[:n]))))
	}
	if !masterAlive(sock) {
		return "", fmt.Errorf("starting the ssh master of box %s: nothing listens on %s", box, sock)
	}
	return sock, nil
}

// CloseMaster ends the box's ssh master, if one runs, and removes its
// socket. Sessions still open on it end with it.
func (s *Service) CloseMaster(ctx context.Context, box string) {
	sock := s.Layout.SSHMaster(box)
	if masterAlive(sock) {
		argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{})
		if err == nil {
			host := argv[len(argv)-1]
			argv = append(argv[:len(argv)-1:len(argv)-1], "-o", "ControlPath="+sock, "-O", "exit", host)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
			cmd.Env = masterEnviron()
			if out, err := cmd.CombinedOutput(); err != nil {
				s.Logger.Warn("closing the ssh master", "box", box, "err", err, "out", firstLine(string(out)))
			}
			cancel()
			// -O exit returns once the master has the request; the master
			// removes its socket on the way out.
			for i := 0; i < 40; i++ {
				if _, err := os.Stat(sock); errors.Is(err, os.ErrNotExist) {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.Logger.Warn("removing the control socket", "box", box, "err", err)
	}
}

// sshMasterLockWait bounds the wait for another session starting the
// box's ssh master (seconds, unless its process stopped).
const sshMasterLockWait = 2 * time.Minute

// flockFile takes an exclusive lock on path (a lock file, never followed
// if it is a symbolic link), waiting until ctx ends or for at most wait;
// the error then names the holder when it can.
func flockFile(ctx context.Context, path string, wait time.Duration) (func(), error) {
	f, err := untrusted.OpenLock(path, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := atomicfile.TryFlock(f, path, unix.LOCK_EX)
		if err != nil {
			f.Close()
			return nil, err
		}
		if ok && !atomicfile.StillAt(f, path) { // removed by gc meanwhile: lock the new file
			f.Close()
			if f, err = untrusted.OpenLock(path, 0o600); err != nil {
				return nil, err
			}
			continue
		}
		if ok {
			return func() { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN); _ = f.Close() }, nil
		}
		if time.Now().After(deadline) {
			err := &atomicfile.LockError{Path: path, Wait: wait, Holder: atomicfile.LockHolder(f)}
			f.Close()
			return nil, err
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
