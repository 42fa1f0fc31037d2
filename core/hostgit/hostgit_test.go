package hostgit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
}

// git runs plain git (the test's stand-in for the box or the user) in dir.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitCmd is git in dir with no user or system config and a fixed identity.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
	return cmd
}

// treeHash hashes every file under dir (names, modes, contents).
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, _ := d.Info()
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + info.Mode().String() + "\x00"))
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	return string(h.Sum(nil))
}

// hostAndBox makes a host repository with one commit and a box clone of it.
func benchGit(b *testing.B, dir string, args ...string) { git(b, dir, args...) }

func hostAndBox(t *testing.T) (host, box string) {
	t.Helper()
	needGit(t)
	root := t.TempDir()
	host, box = filepath.Join(root, "host"), filepath.Join(root, "box")
	must(t, os.MkdirAll(host, 0o755))
	git(t, host, "init", "-q", "-b", "main")
	must(t, os.WriteFile(filepath.Join(host, "a.txt"), []byte("a\n"), 0o644))
	git(t, host, "add", "a.txt")
	git(t, host, "commit", "-q", "-m", "first")
	git(t, root, "clone", "-q", host, box)
	return host, box
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPullRoundTrip(t *testing.T) {
	host, box := hostAndBox(t)
	ctx := context.Background()
	r, err := Open(host)
	must(t, err)

	// The host repository carries things a fetch must never run.
	marker := filepath.Join(t.TempDir(), "ran")
	hook := "#!/bin/sh\necho ran >> " + marker + "\n"
	for _, h := range []string{"reference-transaction", "post-merge", "post-checkout"} {
		must(t, os.WriteFile(filepath.Join(host, ".git", "hooks", h), []byte(hook), 0o755))
	}
	before := treeHash(t, filepath.Join(host, ".git", "hooks")) + readFile(t, filepath.Join(host, ".git", "config"))

	// The box commits on main and on a new branch, with a subject that
	// tries to move the terminal's cursor.
	must(t, os.WriteFile(filepath.Join(box, "b.txt"), []byte("b\n"), 0o644))
	git(t, box, "add", "b.txt")
	git(t, box, "commit", "-q", "-m", "second \x1b[2Jclear")
	git(t, box, "checkout", "-q", "-b", "feature/x")
	git(t, box, "commit", "-q", "--allow-empty", "-m", "third")

	haves, err := r.Haves(ctx, "web-1")
	must(t, err)
	if len(haves) != 1 {
		t.Fatalf("haves = %v", haves)
	}
	bundle := filepath.Join(t.TempDir(), "in.bundle")
	git(t, box, append([]string{"bundle", "create", "-q", bundle, "--branches", "--not"}, haves...)...)
	in, err := os.Open(bundle)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
	must(t, err)
	if len(b.Heads) != 2 || b.Heads[0].Name != "refs/heads/feature/x" || len(b.Prerequisites) != 1 {
		t.Fatalf("bundle %+v", b)
	}
	res, err := r.Fetch(ctx, b, boxHeads(t, box), "web-1", FetchOptions{})
	must(t, err)
	if res.NewCommits != 2 || len(res.Commits) != 2 || len(res.Updates) != 2 {
		t.Fatalf("result %+v", res)
	}
	if !strings.HasSuffix(res.Commits[1], `second \x1b[2Jclear`) {
		t.Errorf("commit line not made safe: %q", res.Commits[1])
	}
	if got := git(t, host, "rev-parse", "refs/remotes/corral/web-1/feature/x"); got != git(t, box, "rev-parse", "feature/x") {
		t.Errorf("feature/x = %s", got)
	}
	if got := git(t, host, "for-each-ref", "--format=%(refname)", "refs/heads/"); got != "refs/heads/main" {
		t.Errorf("host branches changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(host, ".git", "FETCH_HEAD")); err == nil {
		t.Error("FETCH_HEAD written")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a host hook ran during the pull")
	}
	if after := treeHash(t, filepath.Join(host, ".git", "hooks")) + readFile(t, filepath.Join(host, ".git", "config")); after != before {
		t.Error("the pull changed .git/config or hooks/")
	}

	// The box deletes a branch: the next pull removes it; an unchanged
	// branch arrives as a full bundle without any new commit.
	git(t, box, "checkout", "-q", "main")
	git(t, box, "branch", "-q", "-D", "feature/x")
	git(t, box, "bundle", "create", "-q", bundle+"2", "--branches")
	in2, err := os.Open(bundle + "2")
	must(t, err)
	defer in2.Close()
	b2, err := ReceiveBundle(in2, t.TempDir(), 1<<20)
	must(t, err)
	res, err = r.Fetch(ctx, b2, boxHeads(t, box), "web-1", FetchOptions{})
	must(t, err)
	if len(res.Updates) != 1 || res.Updates[0].Branch != "feature/x" || res.Updates[0].New != "" || res.NewCommits != 0 {
		t.Errorf("second pull %+v", res)
	}
}

// boxHeads is dir's branch list as corral-repo heads prints it, parsed.
func boxHeads(tb testing.TB, dir string) Heads {
	tb.Helper()
	cmd := exec.Command("git", "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		tb.Fatal(err)
	}
	h, err := ParseHeads(bytes.NewReader(out))
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

func TestFetchRefusesMissingPrerequisite(t *testing.T) {
	host, box := hostAndBox(t)
	other := filepath.Join(t.TempDir(), "other")
	git(t, filepath.Dir(other), "init", "-q", "-b", "main", other)
	git(t, other, "commit", "-q", "--allow-empty", "-m", "unrelated")
	git(t, other, "commit", "-q", "--allow-empty", "-m", "unrelated 2")
	bundle := filepath.Join(t.TempDir(), "x.bundle")
	git(t, other, "bundle", "create", "-q", bundle, "main", "^main~1")
	_ = box
	r, err := Open(host)
	must(t, err)
	in, err := os.Open(bundle)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
	must(t, err)
	if _, err := r.Fetch(context.Background(), b, Heads{b.Heads[0].Name: b.Heads[0].OID}, "web-1", FetchOptions{}); !errors.Is(err, ErrBundle) {
		t.Errorf("err = %v, want ErrBundle", err)
	}
}

func TestReceiveBundleCaps(t *testing.T) {
	dir := t.TempDir()
	_, err := ReceiveBundle(strings.NewReader("# v2 git bundle\n"+strings.Repeat("x", 100)), dir, 50)
	if !errors.Is(err, ErrBundle) {
		t.Errorf("err = %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v behind", ents)
	}
}

func TestParseHeader(t *testing.T) {
	oid := strings.Repeat("a", 40)
	tests := []struct {
		name, in string
		ok       bool
	}{
		{"v2", "# v2 git bundle\n" + oid + " refs/heads/main\n\nPACK", true},
		{"v3 sha256", "# v3 git bundle\n@object-format=sha256\n" + strings.Repeat("b", 64) + " refs/heads/main\n\n", true},
		{"prerequisite", "# v2 git bundle\n-" + oid + " subject\n" + oid + " refs/heads/main\n\n", true},
		{"not a bundle", "PACK\n\n", false},
		{"filter capability", "# v3 git bundle\n@filter=blob:none\n" + oid + " refs/heads/main\n\n", false},
		{"capability in v2", "# v2 git bundle\n@object-format=sha1\n\n", false},
		{"tag", "# v2 git bundle\n" + oid + " refs/tags/v1\n\n", false},
		{"HEAD", "# v2 git bundle\n" + oid + " HEAD\n\n", false},
		{"other namespace", "# v2 git bundle\n" + oid + " refs/remotes/origin/main\n\n", false},
		{"escape into another box", "# v2 git bundle\n" + oid + " refs/heads/../../remotes/corral/b/main\n\n", false},
		{"control character", "# v2 git bundle\n" + oid + " refs/heads/a\x1b[31m\n\n", false},
		{"bidi override", "# v2 git bundle\n" + oid + " refs/heads/a\u202eb\n\n", false},
		{"short oid", "# v2 git bundle\nabc refs/heads/main\n\n", false},
		{"duplicate", "# v2 git bundle\n" + oid + " refs/heads/m\n" + oid + " refs/heads/m\n\n", false},
		{"cut short", "# v2 git bundle\n" + oid + " refs/heads/main\n", false},
		{"lock suffix", "# v2 git bundle\n" + oid + " refs/heads/x.lock\n\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseHeader(strings.NewReader(tt.in))
			if (err == nil) != tt.ok {
				t.Errorf("err = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrBundle) {
				t.Errorf("error not marked ErrBundle: %v", err)
			}
		})
	}
}

// TestCheckRefFormatMatchesGit compares with git check-ref-format on
// random names built from the characters its rules are about.
func TestCheckRefFormatMatchesGit(t *testing.T) {
	needGit(t)
	alphabet := []string{"a", "b", "/", ".", "..", "@", "{", "@{", "~", "^", ":", "?", "*", "[", "\\", " ", "\x01", "\x7f", ".lock", "é", "-"}
	rng := rand.New(rand.NewSource(1))
	var names []string
	for i := 0; i < 300; i++ {
		var b strings.Builder
		b.WriteString("refs/heads/")
		for j := rng.Intn(6); j >= 0; j-- {
			b.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		names = append(names, b.String())
	}
	names = append(names, "refs/heads/ok", "refs/heads/a/b", "@", "refs", "refs/heads/x.", "/refs/heads/x")
	for _, n := range names {
		err := exec.Command("git", "check-ref-format", n).Run()
		if got := CheckRefFormat(n); got != (err == nil) {
			t.Errorf("CheckRefFormat(%q) = %v, git says %v", n, got, err == nil)
		}
	}
}

func FuzzParseHeader(f *testing.F) {
	oid := strings.Repeat("a", 40)
	f.Add([]byte("# v2 git bundle\n" + oid + " refs/heads/main\n\n"))
	f.Add([]byte("# v3 git bundle\n@object-format=sha1\n-" + oid + " x\n" + oid + " refs/heads/a/b\n\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := ParseHeader(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, h := range b.Heads {
			if !strings.HasPrefix(h.Name, "refs/heads/") || !CheckRefFormat(h.Name) || !Printable(h.Name) || !ValidOID(h.OID) {
				t.Fatalf("accepted head %q %q", h.Name, h.OID)
			}
		}
	})
}

func TestOpenGitdirFile(t *testing.T) {
	host, _ := hostAndBox(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, host, "worktree", "add", "-q", wt)
	r, err := Open(wt)
	must(t, err)
	if want := filepath.Join(host, ".git", "worktrees", "wt"); r.GitDir != want {
		t.Errorf("GitDir = %s, want %s", r.GitDir, want)
	}
	if _, err := Open(t.TempDir()); !errors.Is(err, ErrNotRepository) {
		t.Errorf("plain dir: %v", err)
	}
}

func TestCreateBundle(t *testing.T) {
	host, _ := hostAndBox(t)
	r, err := Open(host)
	must(t, err)
	p := filepath.Join(t.TempDir(), "c.bundle")
	ok, err := r.CreateBundle(context.Background(), p)
	must(t, err)
	if !ok {
		t.Fatal("no bundle")
	}
	out := git(t, host, "bundle", "list-heads", p)
	if !strings.Contains(out, "refs/heads/main") || !strings.Contains(out, "HEAD") {
		t.Errorf("heads %q", out)
	}
	empty := t.TempDir()
	git(t, empty, "init", "-q")
	r2, err := Open(empty)
	must(t, err)
	if ok, err := r2.CreateBundle(context.Background(), p+"2"); ok || err != nil {
		t.Errorf("empty repository: ok %v err %v", ok, err)
	}
}
