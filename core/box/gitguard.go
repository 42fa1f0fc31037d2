package box

import (
	"fmt"
	"runtime"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/lima"
)

// GitGuarded reports whether the host guard watches a box's repository:
// whenever the box could write the project's git directory, that is with
// the opt-out (git_shadow = false) or where only the guest enforces the
// read-only share (macOS, any driver but Linux qemu, or a project not
// served by qemu's own 9p: reverse-sshfs's sftp-server and virtiofs's
// virtiofsd run outside qemu's namespace). Where the host enforces it
// (Linux, qemu, 9p) only the user can change .git, and reverting the
// user's own `git config` would be wrong.
func GitGuarded(m Meta, goos string) bool {
	served9p := m.MountType == "9p" || m.MountType == "" // "": metadata from before mount_type was recorded (9p was the only Linux default)
	return m.GitShadowOff || goos != "linux" || m.VMType != "qemu" || !served9p
}

// GitGuardReport is one box's guard result: what changed in what git
// executes while the box could write it, and whether it was reverted.
type GitGuardReport struct {
	Box     string
	Changes []gitshadow.Change
	Err     error // nil: every change was reverted
}

func (s *Service) gitGuard(box string) gitshadow.Guard {
	return gitshadow.Guard{Dir: s.Layout.GitGuardDir(box)}
}

// armGitGuard records the fingerprint when a session starts. With one
// already armed (another session runs, or the box was never stopped
// through corral) it checks and reverts first: a record must never bless
// what the box wrote.
func (s *Service) armGitGuard(m Meta) {
	if !GitGuarded(m, runtime.GOOS) || m.Project == "" {
		return
	}
	g := s.gitGuard(m.Name)
	if g.Armed() {
		s.guardGit(m, false)
		return
	}
	if err := g.Record(m.Project, s.now()); err != nil {
		s.Logger.Warn("git guard: recording the fingerprint", "box", m.Name, "err", err)
	}
}

// guardGit checks one armed box, reverts and audits what changed; with
// disarm (the box stopped) it then forgets the fingerprint.
func (s *Service) guardGit(m Meta, disarm bool) *GitGuardReport {
	g := s.gitGuard(m.Name)
	if !g.Armed() {
		return nil
	}
	var rep *GitGuardReport
	changes, err := g.Check()
	if err != nil || len(changes) > 0 {
		if err == nil {
			err = g.Revert(changes, s.now())
		}
		rep = &GitGuardReport{Box: m.Name, Changes: changes, Err: err}
		fields := map[string]any{"project": m.Project, "reverted": err == nil}
		var list []string
		for _, c := range changes {
			list = append(list, c.String())
		}
		fields["changes"] = list
		if err != nil {
			fields["error"] = err.Error()
		}
		s.audit(audit.Event{Kind: audit.KindGitGuard, Box: m.Name, Fields: fields})
	}
	if disarm && (rep == nil || rep.Err == nil) {
		_ = g.Disarm()
	}
	return rep
}

// gitGuardCheck is doctor's view of the host repository's protection.
func (s *Service) gitGuardCheck(m Meta) Check {
	const name = "host repository"
	if !GitGuarded(m, runtime.GOOS) {
		return pass(name, "host-enforced: qemu sees the project's git directory read-only; git in the box writes its shadow")
	}
	how := "guest-enforced (guest root could undo the read-only share)"
	if m.GitShadowOff {
		how = "git_shadow = false: the box may write .git"
	}
	g := s.gitGuard(m.Name)
	if !g.Armed() {
		return pass(name, how+"; the host guard arms at the next session")
	}
	changes, err := g.Check()
	switch {
	case err != nil:
		return fail(name, how+"; the host guard cannot check: "+err.Error(), "corral stop "+m.Name)
	case len(changes) > 0:
		return fail(name, fmt.Sprintf("%s; %d change(s) to what git executes are not reverted yet", how, len(changes)),
			"run any corral command (it reverts them), and do not run git in "+m.Project+" before")
	}
	return pass(name, how+"; the host guard finds what git executes unchanged since the session started")
}

// GuardGit compares every armed box's repository with the fingerprint
// recorded at session start and reverts (from the recorded copies) and
// reports what changed. Every corral command and the app's timer call it:
// corral has no daemon. A box that is no longer running is checked one
// last time and disarmed.
func (s *Service) GuardGit() []GitGuardReport {
	metas, _ := ListMeta(s.Layout)
	var out []GitGuardReport
	for _, m := range metas {
		if !s.gitGuard(m.Name).Armed() {
			continue
		}
		st, _ := lima.ReadInstanceDir(s.Layout.LimaHome(), m.Name)
		if rep := s.guardGit(m, st.Status != lima.StatusRunning); rep != nil {
			out = append(out, *rep)
		}
	}
	return out
}
