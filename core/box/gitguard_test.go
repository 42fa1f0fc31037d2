package box

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/paths"
)

func TestGitGuarded(t *testing.T) {
	for _, tt := range []struct {
		m    boxmeta.Meta
		goos string
		want bool
	}{
		{boxmeta.Meta{VMType: "qemu"}, "linux", false},                    // host-enforced: only the user writes .git
		{boxmeta.Meta{VMType: "qemu", GitShadowOff: true}, "linux", true}, // the opt-out
		{boxmeta.Meta{VMType: "vz"}, "darwin", true},                      // guest-enforced
		{boxmeta.Meta{VMType: "qemu"}, "darwin", true},                    // no namespaces on macOS
		{boxmeta.Meta{VMType: "qemu", MountType: "9p"}, "linux", false},
		{boxmeta.Meta{VMType: "qemu", MountType: "reverse-sshfs"}, "linux", true}, // sftp-server is outside qemu's namespace
		{boxmeta.Meta{VMType: "qemu", MountType: "virtiofs"}, "linux", true},      // so is virtiofsd
	} {
		if got := GitGuarded(tt.m, tt.goos); got != tt.want {
			t.Errorf("GitGuarded(%+v, %s) = %v", tt.m, tt.goos, got)
		}
	}
}

// TestGitGuardMode: the opt-out lets the box commit (Commits); a share
// only the guest enforces gets the same mode: the user keeps committing on
// the host during a session, and Frozen would revert that.
func TestGitGuardMode(t *testing.T) {
	for _, tt := range []struct {
		m    boxmeta.Meta
		goos string
		want gitshadow.Mode
	}{
		{boxmeta.Meta{VMType: "qemu"}, "linux", ""},
		{boxmeta.Meta{VMType: "qemu", MountType: "9p"}, "linux", ""},
		{boxmeta.Meta{VMType: "qemu", GitShadowOff: true}, "linux", gitshadow.Commits},
		{boxmeta.Meta{VMType: "vz", GitShadowOff: true}, "darwin", gitshadow.Commits},
		{boxmeta.Meta{VMType: "vz"}, "darwin", gitshadow.Commits},
		{boxmeta.Meta{VMType: "qemu"}, "darwin", gitshadow.Commits},
		{boxmeta.Meta{VMType: "qemu", MountType: "virtiofs"}, "linux", gitshadow.Commits},
		{boxmeta.Meta{VMType: "qemu", MountType: "reverse-sshfs"}, "linux", gitshadow.Commits},
	} {
		if got := GitGuardMode(tt.m, tt.goos); got != tt.want {
			t.Errorf("GitGuardMode(%+v, %s) = %q, want %q", tt.m, tt.goos, got, tt.want)
		}
	}
}

// TestGuardGitRevertsAndAudits: a box that may write .git (the opt-out)
// has its session's fingerprint recorded; a hostile core.fsmonitor is
// reverted by the next GuardGit, audited, and the stopped box disarmed.
func TestGuardGitRevertsAndAudits(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj, _ := filepath.EvalSymlinks(t.TempDir())
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	s := &Service{Layout: l, Logger: discard(), Now: time.Now, Actor: audit.ActorCLI}
	m := boxmeta.Meta{Name: "p-1", Project: proj, VMType: "vz", GitShadowOff: true}
	if err := boxmeta.Write(l, m); err != nil {
		t.Fatal(err)
	}
	s.armGitGuard(m)
	cfg := filepath.Join(proj, ".git", "config")
	orig, _ := os.ReadFile(cfg)
	if out, err := exec.Command("git", "-C", proj, "config", "core.fsmonitor", "touch /tmp/pwned").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	reps := s.GuardGit()
	if len(reps) != 1 || reps[0].Err != nil || len(reps[0].Changes) != 1 || reps[0].Changes[0].Path != cfg {
		t.Fatalf("reports %+v", reps)
	}
	if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
		t.Errorf("config not reverted: %s", b)
	}
	evs, err := audit.Read(l.AuditLog(), audit.Filter{})
	if err != nil || len(evs) != 1 || evs[0].Kind != audit.KindGitGuard || !strings.Contains(evs[0].Fields["changes"].([]any)[0].(string), "modified") {
		t.Errorf("audit %+v %v", evs, err)
	}
	// The box is not running: that check disarmed the guard.
	if s.gitGuard(m).Armed() {
		t.Error("guard still armed for a stopped box")
	}
}
