package gitshadow

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// commandSettings are git settings that make the host's git run a command
// (or load code), each written as a box would: git config in the project.
var commandSettings = [][2]string{
	{"core.fsmonitor", "touch /tmp/pwned; false"},
	{"core.hooksPath", "/tmp/evil-hooks"},
	{"core.sshCommand", "sh -c 'touch /tmp/pwned'"},
	{"core.editor", "touch /tmp/pwned"},
	{"core.pager", "touch /tmp/pwned; cat"},
	{"core.askPass", "/tmp/evil"},
	{"core.gitProxy", "/tmp/evil"},
	{"filter.lfs.clean", "touch /tmp/pwned"},
	{"filter.x.smudge", "touch /tmp/pwned"},
	{"filter.x.process", "touch /tmp/pwned"},
	{"diff.external", "/tmp/evil"},
	{"diff.x.textconv", "/tmp/evil"},
	{"diff.x.command", "/tmp/evil"},
	{"merge.x.driver", "/tmp/evil %O %A %B"},
	{"credential.helper", "!touch /tmp/pwned"},
	{"credential.https://example.test.helper", "/tmp/evil"},
	{"alias.st", "!touch /tmp/pwned"},
	{"include.path", "/tmp/evil.gitconfig"},
	{"includeIf.gitdir:/.path", "/tmp/evil.gitconfig"},
	{"gpg.program", "/tmp/evil"},
	{"gpg.ssh.program", "/tmp/evil"},
	{"sequence.editor", "/tmp/evil"},
	{"pager.log", "/tmp/evil"},
	{"interactive.diffFilter", "/tmp/evil"},
	{"uploadpack.packObjectsHook", "/tmp/evil"},
	{"remote.origin.uploadpack", "/tmp/evil"},
	{"remote.origin.receivepack", "/tmp/evil"},
	{"protocol.ext.allow", "always"},
	{"web.browser", "/tmp/evil"},
	{"difftool.x.cmd", "/tmp/evil"},
	{"mergetool.x.cmd", "/tmp/evil"},
	{"core.worktree", "/tmp"},
	{"extensions.worktreeConfig", "true"},
	{"safe.directory", "*"},
}

func armed(t *testing.T, project string) Guard {
	t.Helper()
	g := Guard{Dir: filepath.Join(t.TempDir(), "guard")}
	if err := g.Record(project, t0); err != nil {
		t.Fatal(err)
	}
	if ch, err := g.Check(); err != nil || len(ch) != 0 {
		t.Fatalf("fresh record: %v %v", ch, err)
	}
	return g
}

// revertAndCheck runs Check (wanting a change at wantPath), Revert, and
// Check again (wanting none).
func revertAndCheck(t *testing.T, g Guard, wantPath string) {
	t.Helper()
	ch, err := g.Check()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range ch {
		if c.Path == wantPath {
			found = true
		}
	}
	if !found {
		t.Fatalf("change to %s not seen: %v", wantPath, ch)
	}
	if err := g.Revert(ch, t0); err != nil {
		t.Fatal(err)
	}
	if ch, err := g.Check(); err != nil || len(ch) != 0 {
		t.Fatalf("after revert: %v %v", ch, err)
	}
}

func TestGuardRevertsEveryCommandSetting(t *testing.T) {
	repo := newRepo(t)
	cfg := filepath.Join(repo, ".git", "config")
	orig, _ := os.ReadFile(cfg)
	g := armed(t, repo)
	for _, kv := range commandSettings {
		t.Run(kv[0], func(t *testing.T) {
			git(t, repo, "config", kv[0], kv[1])
			revertAndCheck(t, g, cfg)
			if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
				t.Errorf("config not restored:\n%s", b)
			}
		})
	}
}

func TestGuardHooksAndInfo(t *testing.T) {
	repo := newRepo(t)
	g := armed(t, repo)
	for _, p := range []string{"hooks/pre-commit", "hooks/post-checkout", "info/attributes", "info/exclude", "info/sparse-checkout"} {
		t.Run(p, func(t *testing.T) {
			f := filepath.Join(repo, ".git", p)
			old, had := os.ReadFile(f)
			if err := os.WriteFile(f, []byte("#!/bin/sh\ntouch /tmp/pwned\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			revertAndCheck(t, g, f)
			b, err := os.ReadFile(f)
			if had == nil && string(b) != string(old) || had != nil && err == nil {
				t.Errorf("%s not restored: %q %v", p, b, err)
			}
		})
	}
	t.Run("hooks replaced by a symlink", func(t *testing.T) {
		hooks := filepath.Join(repo, ".git", "hooks")
		evil := t.TempDir()
		_ = os.WriteFile(filepath.Join(evil, "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
		if err := os.Rename(hooks, hooks+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(evil, hooks); err != nil {
			t.Fatal(err)
		}
		revertAndCheck(t, g, hooks)
		if fi, err := os.Lstat(hooks); err != nil || !fi.IsDir() {
			t.Errorf("hooks is not a directory again: %v", err)
		}
		if ents, _ := os.ReadDir(evil); len(ents) != 1 {
			t.Errorf("the guard wrote through the symlink: %v", ents)
		}
	})
}

// An include inside the git directory is watched: changing the included
// file is reverted. An include the user's config names outside it (here,
// a file in the work tree) is never watched, read or touched.
func TestGuardIncludedFile(t *testing.T) {
	repo := newRepo(t)
	inc := filepath.Join(repo, ".git", "team.gitconfig")
	_ = os.WriteFile(inc, []byte("[user]\n\tname = x\n"), 0o644)
	git(t, repo, "config", "include.path", "team.gitconfig")
	deep := filepath.Join(repo, ".git", "refs", "heads", "deep.gitconfig") // unwatched in Commits mode, but included
	_ = os.WriteFile(inc, []byte("[include]\n\tpath = refs/heads/deep.gitconfig\n"), 0o644)
	_ = os.WriteFile(deep, []byte(""), 0o644)
	outside := filepath.Join(repo, "work.gitconfig")
	_ = os.WriteFile(outside, []byte(""), 0o644)
	git(t, repo, "config", "--add", "includeIf.onbranch:main.path", "../work.gitconfig")
	for _, mode := range []Mode{Frozen, Commits} {
		t.Run(string(mode), func(t *testing.T) {
			g := Guard{Dir: filepath.Join(t.TempDir(), "guard"), Mode: mode}
			if err := g.Record(repo, t0); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{inc, deep} {
				_ = os.WriteFile(f, []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"), 0o644)
				revertAndCheck(t, g, f)
			}
			_ = os.WriteFile(outside, []byte("[core]\n\tfsmonitor = touch /tmp/pwned\n"), 0o644)
			if ch, err := g.Check(); err != nil || len(ch) != 0 {
				t.Errorf("outside include watched: %v %v", ch, err)
			}
			fp, _ := g.Load()
			if !slices.Contains(fp.Outside, "../work.gitconfig") {
				t.Errorf("Outside = %v", fp.Outside)
			}
		})
	}
}

func TestGuardWorktree(t *testing.T) {
	repo := newRepo(t)
	wt := filepath.Join(filepath.Dir(repo), "wt")
	git(t, repo, "worktree", "add", "-q", wt)
	g := armed(t, wt)
	common := filepath.Join(repo, ".git")
	t.Run("common config", func(t *testing.T) {
		git(t, wt, "config", "core.fsmonitor", "touch /tmp/pwned")
		revertAndCheck(t, g, filepath.Join(common, "config"))
	})
	t.Run("worktree config appears", func(t *testing.T) {
		f := filepath.Join(common, "worktrees", "wt", "config.worktree")
		_ = os.WriteFile(f, []byte("[core]\n\tpager = touch /tmp/pwned\n"), 0o644)
		revertAndCheck(t, g, f)
		if _, err := os.Stat(f); err == nil {
			t.Error("config.worktree still there")
		}
	})
	t.Run("gitdir file retargeted", func(t *testing.T) {
		evil := newRepo(t)
		f := filepath.Join(wt, ".git")
		_ = os.WriteFile(f, []byte("gitdir: "+filepath.Join(evil, ".git")+"\n"), 0o644)
		revertAndCheck(t, g, f)
		if b, _ := os.ReadFile(f); !strings.Contains(string(b), common) {
			t.Errorf(".git file = %q", b)
		}
	})
}

func TestGuardSubmodules(t *testing.T) {
	sub := newRepo(t)
	super := newRepo(t)
	git(t, super, "submodule", "add", "-q", sub, "lib")
	g := armed(t, super)
	mod := filepath.Join(super, ".git", "modules", "lib")
	t.Run("module config", func(t *testing.T) {
		git(t, filepath.Join(super, "lib"), "config", "core.fsmonitor", "touch /tmp/pwned")
		revertAndCheck(t, g, filepath.Join(mod, "config"))
	})
	t.Run("module hook", func(t *testing.T) {
		f := filepath.Join(mod, "hooks", "post-checkout")
		_ = os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755)
		revertAndCheck(t, g, f)
	})
	t.Run("as the project", func(t *testing.T) {
		g := armed(t, filepath.Join(super, "lib"))
		git(t, filepath.Join(super, "lib"), "config", "diff.external", "/tmp/evil")
		revertAndCheck(t, g, filepath.Join(mod, "config"))
	})
}

func TestGuardRefusesAFlood(t *testing.T) {
	repo := newRepo(t)
	g := armed(t, repo)
	g.MaxFiles = 100
	for i := 0; i <= g.MaxFiles; i++ {
		_ = os.WriteFile(filepath.Join(repo, ".git", "hooks", "h"+itoa(i)), nil, 0o644)
	}
	if _, err := g.Check(); err == nil {
		t.Error("a flood of hooks was read")
	}
}

func itoa(i int) string {
	s := ""
	for {
		s = string(rune('0'+i%10)) + s
		i /= 10
		if i == 0 {
			return s
		}
	}
}
