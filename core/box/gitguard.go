package box

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/lima"
)

// GitGuardMode decides how the host guard watches a box's repository
// (the one place this is decided):
//
//   - gitshadow.Commits whenever the box could write the project's git
//     directory: with the opt-out (git_shadow = false), where the user lets
//     the box commit into the host repository, and where only the guest
//     enforces the read-only share (macOS, any driver but Linux qemu, or a
//     project not served by qemu's own 9p: reverse-sshfs's sftp-server and
//     virtiofs's virtiofsd run outside qemu's namespace). What makes git
//     run or substitute something is reverted; refs, HEAD, the index and
//     objects may change. gitshadow.Frozen would revert those too, but in
//     the guest-enforced case the user keeps working in the same
//     repository on the host while a session runs: it would undo the
//     user's own commits and staging, and a moved branch is no more than
//     the work-tree changes the box can make anyway (it runs nothing).
//   - "" (not guarded) where the host enforces it (Linux, qemu, 9p): only
//     the user can change .git, and reverting the user's own `git config`
//     would be wrong.
func GitGuardMode(m boxmeta.Meta, goos string) gitshadow.Mode {
	served9p := m.MountType == config.Mount9p || m.MountType == "" // "": metadata from before mount_type was recorded (9p was the only Linux default)
	if m.GitShadowOff || goos != "linux" || m.VMType != config.VMTypeQEMU || !served9p {
		return gitshadow.Commits
	}
	return ""
}

// GitGuarded reports whether the host guard watches a box's repository:
// whenever the box could write the project's git directory.
func GitGuarded(m boxmeta.Meta, goos string) bool { return GitGuardMode(m, goos) != "" }

// GitGuardReport is one box's guard result: what changed in what git
// executes while the box could write it, and whether it was reverted.
type GitGuardReport struct {
	Box     string
	Changes []gitshadow.Change
	Err     error // nil: every change was reverted
}

// gitGuard is a box's guard; Mode matters only to Record (a recorded
// fingerprint carries its mode).
func (s *Service) gitGuard(m boxmeta.Meta) gitshadow.Guard {
	return gitshadow.Guard{Dir: s.Layout.GitGuardDir(m.Name), Mode: GitGuardMode(m, runtime.GOOS)}
}

// armGitGuard records the fingerprint when a session starts. With one
// already armed (another session runs, or the box was never stopped
// through corral) it checks and reverts first: a record must never bless
// what the box wrote.
func (s *Service) armGitGuard(m boxmeta.Meta) {
	if !GitGuarded(m, runtime.GOOS) || m.Project == "" {
		return
	}
	g := s.gitGuard(m)
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
func (s *Service) guardGit(m boxmeta.Meta, disarm bool) *GitGuardReport {
	g := s.gitGuard(m)
	if !g.Armed() {
		return nil
	}
	var rep *GitGuardReport
	changes, err := g.Check()
	if err != nil || len(changes) > 0 {
		// Changes come with an error too (a flood stops the scan after the
		// recorded files): revert what was found.
		if len(changes) > 0 {
			err = errors.Join(err, g.Revert(changes, s.now()))
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
func (s *Service) gitGuardCheck(m boxmeta.Meta) Check {
	const name = "host repository"
	if !GitGuarded(m, runtime.GOOS) {
		return pass(name, "host-enforced: qemu sees the project's git directory read-only; git in the box writes its shadow")
	}
	how := "guest-enforced (guest root could undo the read-only share)"
	if m.GitShadowOff {
		how = "git_shadow = false: the box may write .git"
	}
	g := s.gitGuard(m)
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
	metas, _ := boxmeta.List(s.Layout)
	var out []GitGuardReport
	for _, m := range metas {
		if !s.gitGuard(m).Armed() {
			continue
		}
		st, _ := lima.ReadInstanceDir(s.Layout.LimaHome(), m.Name)
		if rep := s.guardGit(m, st.Status != lima.StatusRunning); rep != nil {
			out = append(out, *rep)
		}
	}
	return out
}

// nestedRepos looks for git repositories the box may have made inside the
// project (gitshadow.FindNested, bounded). Not a repository, or a project
// that cannot be read, finds none.
func nestedRepos(m boxmeta.Meta) gitshadow.NestedResult {
	if m.Project == "" {
		return gitshadow.NestedResult{}
	}
	d, err := gitshadow.Find(m.Project)
	if err != nil {
		return gitshadow.NestedResult{}
	}
	res, _ := gitshadow.FindNested(context.Background(), d, gitshadow.NestedLimits{})
	return res
}

// maxNestedShown caps the nested repositories named in one message.
const maxNestedShown = 5

// nestedText says where the nested repositories are and why they matter;
// the paths are box-written, sanitised for the terminal.
func nestedText(m boxmeta.Meta, res gitshadow.NestedResult) string {
	var list []string
	for i, n := range res.Repos {
		if i == maxNestedShown {
			list = append(list, fmt.Sprintf("and %d more", len(res.Repos)-i))
			break
		}
		list = append(list, display.Text(n.Rel, 120))
	}
	more := ""
	if res.Truncated {
		more = " (the search stopped at its limit: there may be more)"
	}
	return fmt.Sprintf("%d git repositories inside %s are not the project's own or its submodules: %s%s; host git run inside them uses the config and hooks the box wrote there",
		len(res.Repos), display.Text(m.Project, 200), strings.Join(list, ", "), more)
}

// nestedFix is what the user does about them.
func nestedFix(m boxmeta.Meta, res gitshadow.NestedResult) string {
	if len(res.Repos) == 0 {
		return ""
	}
	return "do not run git inside them on the host; look and remove each .git you did not make (rm -rf " + display.Text(shellQuote(filepath.Join(m.Project, res.Repos[0].Rel, ".git")), 300) + ")"
}

// reportNested warns about and audits the nested repositories of m's
// project: at box stop and after corral pull.
func (s *Service) reportNested(m boxmeta.Meta, when string) {
	res := nestedRepos(m)
	if len(res.Repos) == 0 {
		return
	}
	s.progress("corral: WARNING: box %s: %s\nhint: %s", m.Name, nestedText(m, res), nestedFix(m, res))
	var rels []string
	for _, n := range res.Repos {
		rels = append(rels, n.Rel)
	}
	s.audit(audit.Event{Kind: audit.KindNestedGit, Box: m.Name, Fields: map[string]any{
		"project": m.Project, "repos": rels, "truncated": res.Truncated, "when": when,
	}})
}

// nestedCheck is doctor's view of nested repositories.
func nestedCheck(m boxmeta.Meta) Check {
	const name = "nested repositories"
	res := nestedRepos(m)
	if len(res.Repos) == 0 {
		detail := "no git repository inside the project but its own and its submodules"
		if res.Truncated {
			detail += " (the search stopped at its limit)"
		}
		return pass(name, detail)
	}
	return fail(name, nestedText(m, res), nestedFix(m, res))
}
