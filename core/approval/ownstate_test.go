package approval

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted/untrustedtest"
)

// within runs fn and fails the test if it has not returned after d: a
// read that blocks (a FIFO) or never ends (/dev/zero) shows as a timeout,
// not a hung test binary.
func within(t *testing.T, d time.Duration, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("still running after %s", d)
		return nil
	}
}

// Every bad approvals file is an error naming it, with a hint, at once:
// for the readers (the broker's allow-list) and for the writers, which
// hold the file's lock while they read.
func TestBadApprovalsFile(t *testing.T) {
	for _, kind := range untrustedtest.All {
		t.Run(string(kind), func(t *testing.T) {
			s, c, _ := newStore(t)
			untrustedtest.Make(t, s.Path(), kind)
			for name, op := range map[string]func() error{
				"active": func() error { _, err := s.Active(c.now()); return err },
				"add":    func() error { _, err := s.Add("a.example.test", ScopeAlways, audit.ActorCLI); return err },
				"clear":  s.ClearSession,
			} {
				err := within(t, 10*time.Second, op)
				if err == nil || !strings.Contains(err.Error(), s.Path()) || hint.Of(err) == "" {
					t.Errorf("%s: %v (hint %q), want an error naming %s with a hint", name, err, hint.Of(err), s.Path())
				}
				if err != nil && len(err.Error()) > 1000 {
					t.Errorf("%s: error of %d bytes", name, len(err.Error()))
				}
			}
			// The lock is free: once the file is gone, a grant works.
			if err := os.RemoveAll(s.Path()); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Add("a.example.test", ScopeAlways, audit.ActorCLI); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A FIFO as the audit log fails `allow` at once and leaves the approvals
// lock free: a second allow after the FIFO is gone succeeds.
func TestAllowWithBadAuditLog(t *testing.T) {
	for _, kind := range untrustedtest.Special {
		t.Run(string(kind), func(t *testing.T) {
			l := paths.Layout{Home: t.TempDir()}
			untrustedtest.Make(t, l.AuditLog(), kind)
			err := within(t, 10*time.Second, func() error {
				_, err := Allow(l, testBox, "api.example.test", ScopeAlways, audit.ActorCLI)
				return err
			})
			if err == nil || !strings.Contains(err.Error(), l.AuditLog()) {
				t.Fatalf("allow: %v, want an error naming %s", err, l.AuditLog())
			}
			if err := os.RemoveAll(l.AuditLog()); err != nil {
				t.Fatal(err)
			}
			if err := within(t, 10*time.Second, func() error {
				_, err := Allow(l, testBox, "api.example.test", ScopeAlways, audit.ActorCLI)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A grant that would make the file larger than MaxFile is refused and
// writes nothing; the file stays readable.
func TestApprovalsCap(t *testing.T) {
	s, c, _ := newStore(t)
	// Fill close to the cap directly, as corral writes the file (thousands
	// of Adds would be slow).
	at := c.now().UTC()
	list := []Approval{}
	encode := func() []byte {
		out, err := json.MarshalIndent(file{Version: fileVersion, Box: testBox, Approvals: list}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		return append(out, '\n')
	}
	for step := 1024; step > 0; step /= 2 {
		for {
			n := len(list)
			for i := range step {
				list = append(list, Approval{Entry: fmt.Sprintf("h%d.example.test", n+i), Scope: ScopeAlways, Added: at, Actor: audit.ActorCLI})
			}
			if len(encode()) > MaxFile-100 {
				list = list[:n]
				break
			}
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.Path()), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(s.Path(), encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	before, err := s.All()
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Add("one-more-host-with-a-long-name.example.test", ScopeAlways, audit.ActorCLI)
	if err == nil || hint.Of(err) == "" {
		t.Fatalf("add past the cap: %v", err)
	}
	after, err := s.List(c.now())
	if err != nil || len(after) != len(before) {
		t.Fatalf("after a refused add: %d approvals (was %d), %v", len(after), len(before), err)
	}
	// Revoking still works: it shrinks the file.
	if _, err := s.Remove("h0.example.test"); err != nil {
		t.Fatal(err)
	}
}
