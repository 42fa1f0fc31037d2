package box

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// plantSocket leaves a Unix socket at path as a crashed process does (no
// listener), or with one when live; mtime sets its age.
func plantSocket(t *testing.T, path string, live bool, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	if live {
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	} else {
		ln.SetUnlinkOnClose(false)
		ln.Close()
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func plantFile(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

// TestGCLeftovers: gc removes what crashed corral processes leave (relay
// sockets and their directories, temp files, lock files of what is gone)
// and says so, and leaves alone a live relay, a fresh socket, a held
// lock, the lock of a live box or of a file that exists, and another
// user's socket.
func TestGCLeftovers(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	ctx := context.Background()
	if _, err := s.Up(ctx, r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	l := s.Layout
	old := time.Now().Add(-time.Hour)
	run := l.RunDir()
	// Removed.
	deadRelayDir := filepath.Join(run, "relay-00000000000000aa")
	plantSocket(t, filepath.Join(deadRelayDir, "s"), false, old)
	deadRelaySock := filepath.Join(run, "relay-00000000000000bb.sock")
	plantSocket(t, deadRelaySock, false, old)
	emptyRelayDir := filepath.Join(run, "relay-00000000000000ee")
	if err := os.Mkdir(emptyRelayDir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(emptyRelayDir, old, old) //nolint:errcheck
	goneBoxLock := l.Lock("gone-123456")
	plantFile(t, goneBoxLock, old)
	goneSSHLock := filepath.Join(l.SSHDir(), "gone-123456.lock")
	plantFile(t, goneSSHLock, old)
	goneLogLock := l.EgressLog("gone-123456") + ".lock"
	plantFile(t, goneLogLock, old)
	temp := filepath.Join(l.SSHDir(), ".x.tmp-123")
	plantFile(t, temp, old)
	bundle := filepath.Join(run, "pull-123456.bundle")
	plantFile(t, bundle, old)
	keptTemp := l.AuditLog() + ".kept.tmp123456"
	plantFile(t, keptTemp, old)
	freshBundle := filepath.Join(run, "pull-654321.bundle")
	plantFile(t, freshBundle, time.Now())
	// Kept.
	liveRelay := filepath.Join(run, "relay-00000000000000cc")
	plantSocket(t, filepath.Join(liveRelay, "s"), true, old)
	freshSock := filepath.Join(run, "relay-00000000000000dd.sock")
	plantSocket(t, freshSock, false, time.Now())
	liveBoxLock := l.Lock(r.Project.Box)
	os.Chtimes(liveBoxLock, old, old) //nolint:errcheck
	heldLock := l.Lock("held-123456")
	plantFile(t, heldLock, old)
	hf, err := os.Open(heldLock)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.Close()
	if err := syscall.Flock(int(hf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	auditLock := l.AuditLog() + ".lock"
	os.Chtimes(auditLock, old, old) //nolint:errcheck
	kept := []string{liveRelay, freshSock, liveBoxLock, heldLock, freshBundle}
	if _, err := os.Stat(auditLock); err == nil {
		kept = append(kept, auditLock)
	}
	othersSock := filepath.Join(run, "relay-00000000000000ff.sock")
	plantSocket(t, othersSock, false, old)
	if err := os.Lchown(othersSock, 65534, 65534); err == nil {
		kept = append(kept, othersSock)
	} else {
		os.Remove(othersSock)
	}

	plan, err := s.PlanGC(false)
	if err != nil {
		t.Fatal(err)
	}
	done, err := s.GC(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, it := range done {
		said = append(said, it.String())
	}
	removed := []string{deadRelayDir, deadRelaySock, emptyRelayDir, goneBoxLock, goneSSHLock, goneLogLock, temp, bundle, keptTemp}
	for _, p := range removed {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", p, err)
		}
		if !slices.ContainsFunc(said, func(s string) bool { return strings.Contains(s, p) }) {
			t.Errorf("%s removed without saying so: %q", p, said)
		}
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if len(done) != len(removed) {
		t.Errorf("removed %q, want %d items", said, len(removed))
	}
}
