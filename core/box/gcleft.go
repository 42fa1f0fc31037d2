package box

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/jsonl"
	"github.com/corral-dev/corral/core/untrusted"
)

// What a crashed corral process leaves behind, besides temp files: the
// credential relay's socket and directory (core/credential, laptop side:
// run/relay-<hex>/s) or the socket ssh forwarded to a remote corral
// (core/remote, host side: run/relay-<hex>.sock), and lock files of what
// no longer exists. gc removes them only when they are its user's, nothing
// answers on the socket and nobody holds the lock, and only past a grace
// period, so that a relay being set up or a lock about to be taken is
// never taken for one.

// LeftoverGrace is how old a relay socket or directory must be before gc
// takes it for a crashed process's: setting a relay up takes
// milliseconds.
const LeftoverGrace = time.Minute

// relayPrefix names the relays' sockets and directories in the run
// directory (core/credential StartRelay, core/remote placeRelay).
const relayPrefix = "relay-"

// GCRelaySocket is a credential relay's socket, or its directory, in the run
// directory.
type GCRelaySocket struct {
	Path    string
	ModTime time.Time
	// Listening: a connection to the socket was accepted (a live relay).
	Listening bool
}

// GCLockFile is a lock file in corral's state directories.
type GCLockFile struct {
	Path    string
	ModTime time.Time
	// Box is the box (or golden image) of a box or ssh-master lock; ""
	// for the lock of a file.
	Box string
	// SubjectExists: for the lock of a file, the file (or, for a log, a
	// generation of it) exists.
	SubjectExists bool
	// Held: another process holds the lock.
	Held bool
}

// ownedByMe reports whether fi is owned by this process's user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// listening reports whether a Unix socket at path accepts a connection.
func listening(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// scanRelays lists the relay sockets and directories in runDir that are
// this user's.
func scanRelays(runDir string) []GCRelaySocket {
	ents, _ := os.ReadDir(runDir)
	var out []GCRelaySocket
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), relayPrefix) {
			continue
		}
		p := filepath.Join(runDir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil || !ownedByMe(fi) {
			continue
		}
		s := GCRelaySocket{Path: p, ModTime: fi.ModTime()}
		switch {
		case fi.IsDir():
			s.Listening = listening(filepath.Join(p, "s"))
		case fi.Mode()&fs.ModeSocket != 0:
			s.Listening = listening(p)
		default:
			continue
		}
		out = append(out, s)
	}
	return out
}

// scanLocks lists the lock files of l's state that are this user's: box
// and ssh-master locks, and the locks beside files (approvals, trusted
// layers, the hosts file, recent projects, logs).
func (s *Service) scanLocks() []GCLockFile {
	var out []GCLockFile
	add := func(dir string, box bool) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			name, ok := strings.CutSuffix(e.Name(), atomicfile.LockSuffix)
			if !ok || name == "" || !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, err := e.Info()
			if err != nil || !ownedByMe(fi) {
				continue
			}
			k := GCLockFile{Path: p, ModTime: fi.ModTime(), Held: lockHeld(p)}
			if box {
				k.Box = name
			} else {
				subject := filepath.Join(dir, name)
				for _, g := range append(jsonl.Generations(subject), subject) {
					if _, err := os.Lstat(g); err == nil {
						k.SubjectExists = true
					}
				}
			}
			out = append(out, k)
		}
	}
	add(s.Layout.RunDir(), true)
	add(s.Layout.SSHDir(), true)
	for _, dir := range []string{s.Layout.Home, s.Layout.ProjectsDir(), s.Layout.LogsDir()} {
		add(dir, false)
	}
	return out
}

// lockHeld reports whether another process holds a lock on path.
func lockHeld(path string) bool {
	f, err := untrusted.OpenLock(path, atomicfile.FileMode)
	if err != nil {
		return true // not ours to judge: left alone
	}
	defer f.Close()
	ok, err := atomicfile.TryFlock(f, path, syscall.LOCK_EX)
	return err != nil || !ok
}

// removeRelay removes a relay's socket or directory after checking again
// that it is this user's and nothing answers on it.
func removeRelay(path string, now time.Time) error {
	fi, err := os.Lstat(path)
	if err != nil || !ownedByMe(fi) || now.Sub(fi.ModTime()) < LeftoverGrace {
		return errGCSkip
	}
	sock := path
	if fi.IsDir() {
		sock = filepath.Join(path, "s")
	}
	if listening(sock) {
		return errGCSkip
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// removeLock removes a lock file while holding it, after checking again
// that its subject is gone (gone reports it, under the lock). Lockers
// check after taking a lock that its file is still at its path
// (atomicfile.Flock's callers, LockBox), so one that opened it before the
// removal takes the lock again on the new file.
func removeLock(path string, gone func() bool) error {
	f, err := untrusted.OpenLock(path, atomicfile.FileMode)
	if err != nil {
		return errGCSkip
	}
	defer f.Close()
	ok, err := atomicfile.TryFlock(f, path, syscall.LOCK_EX)
	if err != nil || !ok || !gone() {
		return errGCSkip
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// isLeftoverTemp reports whether name is a temp file some corral process
// writes and removes when it is done: atomicfile's temps, a pulled or
// received bundle being checked (hostgit.ReceiveBundle, in the run
// directory), and the kept lines of a log being rewritten (core/jsonl).
// One left behind is a crashed process's once it is older than
// atomicfile.OrphanAge.
func isLeftoverTemp(name string) bool {
	switch {
	case atomicfile.IsTemp(name):
		return true
	case strings.HasPrefix(name, "pull-") && strings.HasSuffix(name, ".bundle"):
		return true
	}
	i := strings.Index(name, jsonl.KeptSuffix+".tmp")
	return i > 0 && i+len(jsonl.KeptSuffix+".tmp") < len(name)
}

// removeLeftoverTemp removes path if it is a regular leftover temp file
// older than atomicfile.OrphanAge at now (checked again: a younger one is
// a write in progress).
func removeLeftoverTemp(path string, now time.Time) error {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || !ownedByMe(fi) || !isLeftoverTemp(filepath.Base(path)) || now.Sub(fi.ModTime()) < atomicfile.OrphanAge {
		return errGCSkip
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}
