package gitwatch

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestReportsWithinTwoSeconds: real inotify (kqueue on macOS). What was
// there at the start is not reported; each move a box can make that puts
// a .git (any spelling) or a HEAD in the tree is, within 2 s: a directory,
// a gitdir: file, a symlink, a rename onto .git, a tree moved in with a
// .git inside, one made in a directory created a moment before.
func TestReportsWithinTwoSeconds(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{".git/hooks", "vendor/lib", "sub/.git"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, "repo", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	got := map[string]string{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	go func() {
		close(ready)
		Watch(ctx, Options{Root: root, Found: func(f Found) {
			mu.Lock()
			got[f.Path] = f.Kind
			mu.Unlock()
		}})
	}()
	<-ready
	time.Sleep(300 * time.Millisecond) // the baseline scan
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := func(s string) string { return filepath.Join(root, s) }
	must(os.Mkdir(p("vendor/lib/.git"), 0o755))
	must(os.WriteFile(p("vendor/.GIT"), []byte("gitdir: /tmp\n"), 0o644))
	must(os.Symlink("/tmp", p("git~1")))
	must(os.Mkdir(p("x"), 0o755))
	must(os.Rename(p("x"), p(".g\u200cit")))
	must(os.Rename(filepath.Join(outside, "repo"), p("moved")))
	must(os.MkdirAll(p("deep/a/b/c/.git"), 0o755))
	must(os.WriteFile(p("bare-HEAD-dir-HEAD"), nil, 0o644)) // not a report
	must(os.MkdirAll(p("bare"), 0o755))
	must(os.WriteFile(p("bare/HEAD"), []byte("ref: refs/heads/main\n"), 0o644))
	want := map[string]string{
		"vendor/lib/.git": "directory", "vendor/.GIT": "file", "git~1": "symlink", ".g\u200cit": "directory",
		"moved/.git": "directory", "deep/a/b/c/.git": "directory", "bare/HEAD": "file",
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := 0
		for rel, kind := range want {
			if got[p(rel)] == kind {
				n++
			}
		}
		all := len(got)
		mu.Unlock()
		if n == len(want) {
			if all != len(want) {
				t.Errorf("reported more than the box made: %v", got)
			}
			return
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("within 2 s: %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
