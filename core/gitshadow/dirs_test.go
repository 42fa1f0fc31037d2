package gitshadow

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// git runs git in dir with no user or system config.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func newRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(dir, "repo")
	_ = os.Mkdir(repo, 0o755)
	git(t, repo, "init", "-q")
	_ = os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "a")
	return repo
}

func TestFindPlainRepo(t *testing.T) {
	repo := newRepo(t)
	d, err := Find(repo)
	if err != nil {
		t.Fatal(err)
	}
	g := filepath.Join(repo, ".git")
	if !d.IsRepo() || d.DotGitIsFile || d.GitDir != g || d.CommonDir != g {
		t.Errorf("%+v", d)
	}
	if got := d.ReadOnly(); !slices.Equal(got, []string{g}) {
		t.Errorf("ReadOnly = %v", got)
	}
	if got := d.Outside(); len(got) != 0 {
		t.Errorf("Outside = %v", got)
	}
}

func TestFindNotARepo(t *testing.T) {
	d, err := Find(t.TempDir())
	if err != nil || d.IsRepo() || d.ReadOnly() != nil {
		t.Errorf("%+v %v", d, err)
	}
}

// A linked worktree's .git is a file naming <main>/.git/worktrees/<name>,
// whose commondir is the main .git: all three are protected, and the two
// directories outside the project are shared (the outermost only).
func TestFindWorktree(t *testing.T) {
	repo := newRepo(t)
	wt := filepath.Join(filepath.Dir(repo), "wt")
	git(t, repo, "worktree", "add", "-q", wt)
	d, err := Find(wt)
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(repo, ".git")
	if !d.DotGitIsFile || d.GitDir != filepath.Join(main, "worktrees", "wt") || d.CommonDir != main {
		t.Errorf("%+v", d)
	}
	if got := d.ReadOnly(); !slices.Equal(got, []string{main, filepath.Join(wt, ".git")}) {
		t.Errorf("ReadOnly = %v", got)
	}
	if got := d.Outside(); !slices.Equal(got, []string{main}) {
		t.Errorf("Outside = %v", got)
	}
}

// A submodule checked out as the project: its .git file names
// <super>/.git/modules/<name>, outside the project.
func TestFindSubmodule(t *testing.T) {
	sub := newRepo(t)
	super := newRepo(t)
	git(t, super, "submodule", "add", "-q", sub, "lib")
	proj := filepath.Join(super, "lib")
	d, err := Find(proj)
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(super, ".git", "modules", "lib")
	if !d.DotGitIsFile || d.GitDir != mod || d.CommonDir != mod {
		t.Errorf("%+v", d)
	}
	if got := d.Outside(); !slices.Equal(got, []string{mod}) {
		t.Errorf("Outside = %v", got)
	}
	// From the superproject, the submodule's git dir is inside .git.
	d, err = Find(super)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ReadOnly(); !slices.Equal(got, []string{filepath.Join(super, ".git")}) {
		t.Errorf("superproject ReadOnly = %v", got)
	}
}

func TestFindHostileGitFile(t *testing.T) {
	for name, content := range map[string]string{
		"no prefix":   "/etc\n",
		"missing dir": "gitdir: /nonexistent/corral-test\n",
		"a file":      "gitdir: /etc/passwd\n",
		"huge":        "gitdir: /" + strings.Repeat("a", MaxGitFile) + "\n",
		"empty":       "gitdir: \n",
	} {
		dir := t.TempDir()
		_ = os.WriteFile(filepath.Join(dir, ".git"), []byte(content), 0o644)
		if _, err := Find(dir); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOutermost(t *testing.T) {
	got := outermost([]string{"/a/b/c", "", "/a/b-x", "/a/b", "/a/b/", "/z"})
	if want := []string{"/a/b", "/a/b-x", "/z"}; !slices.Equal(got, want) {
		t.Errorf("outermost = %v, want %v", got, want)
	}
}
