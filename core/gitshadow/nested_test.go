package gitshadow

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestFindNested: a .git directory and a gitdir: file the box made deep
// in the work tree are found; the project's own .git, a submodule (a
// gitlink in the index) and what lies behind a symlink are not.
func TestFindNested(t *testing.T) {
	sub := newRepo(t)
	repo := newRepo(t)
	git(t, repo, "submodule", "add", "-q", sub, "lib")
	git(t, repo, "commit", "-qm", "lib")
	_ = os.MkdirAll(filepath.Join(repo, "a", "b", "evil", ".git"), 0o755)
	_ = os.MkdirAll(filepath.Join(repo, "c"), 0o755)
	_ = os.WriteFile(filepath.Join(repo, "c", ".git"), []byte("gitdir: /tmp/x\n"), 0o644)
	outside := newRepo(t)
	_ = os.Symlink(outside, filepath.Join(repo, "link"))
	d, err := Find(repo)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"2", "3", "4"} {
		git(t, repo, "update-index", "--index-version", v)
		res, err := FindNested(context.Background(), d, NestedLimits{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range res.Repos {
			got = append(got, n.Rel)
		}
		if !slices.Equal(got, []string{"a/b/evil", "c"}) || res.Truncated || !res.Repos[1].GitFile {
			t.Errorf("index v%s: %+v", v, res)
		}
	}
	res, _ := FindNested(context.Background(), d, NestedLimits{MaxDepth: 2})
	if len(res.Repos) != 1 || !res.Truncated {
		t.Errorf("depth-limited: %+v", res)
	}
	res, _ = FindNested(context.Background(), d, NestedLimits{MaxEntries: 3})
	if !res.Truncated {
		t.Errorf("entry-limited: %+v", res)
	}
}

// TestFindNestedBounded: a wide tree stops at the entry cap, promptly.
func TestFindNestedBounded(t *testing.T) {
	dir := t.TempDir()
	for i := range 200 {
		_ = os.MkdirAll(filepath.Join(dir, itoa(i), "x"), 0o755)
	}
	d := Dirs{Project: dir}
	start := time.Now()
	res, err := FindNested(context.Background(), d, NestedLimits{MaxEntries: 100, Timeout: time.Second})
	if err != nil || !res.Truncated || time.Since(start) > 2*time.Second {
		t.Errorf("%+v %v %v", res, err, time.Since(start))
	}
}

// FuzzGitlinks: any index bytes parse or fail, never panic or loop.
func FuzzGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"))
	f.Add([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01" + string(make([]byte, 62)) + "\x80\x80\x80\x01a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ParseIndexGitlinks(b, false)
		_, _ = ParseIndexGitlinks(b, true)
	})
}
