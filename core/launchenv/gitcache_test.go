package launchenv

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestCachedGitConfigRunsGitOncePerChange(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	proj := t.TempDir()
	cache := t.TempDir()
	old := time.Now().Add(-time.Hour)
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		// Older than the fill, or the fill does not cache (see loadGitIdentity).
		old = old.Add(time.Second)
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	inc := filepath.Join(home, "identity.inc")
	write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = Ada\n[include]\n\tpath = "+inc+"\n")
	write(inc, "[user]\n\temail = ada@example.test\n")
	runs := 0
	run := func(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
		runs++
		return runHost(ctx, dir, name, args...)
	}
	get := func() (string, string) {
		t.Helper()
		f := cachedGitConfig(run, proj, cache)
		n, err := f(context.Background(), "user.name")
		if err != nil {
			t.Fatal(err)
		}
		e, err := f(context.Background(), "user.email")
		if err != nil {
			t.Fatal(err)
		}
		return n, e
	}
	for i, step := range []struct {
		change      func()
		name, email string
		runs        int
	}{
		{func() {}, "Ada", "ada@example.test", 1},
		{func() {}, "Ada", "ada@example.test", 1}, // cached: no git at all
		{func() { write(inc, "[user]\n\temail = lovelace@example.test\n") }, "Ada", "lovelace@example.test", 2},
		{func() {}, "Ada", "lovelace@example.test", 2},
		{func() { write(filepath.Join(home, ".gitconfig"), "[user]\n\tname = Grace\n") }, "Grace", "", 3},
		{func() { // a repository created later sets its own identity
			if out, err := exec.Command("git", "-C", proj, "init", "-q").CombinedOutput(); err != nil {
				t.Fatalf("git init: %v %s", err, out)
			}
			if out, err := exec.Command("git", "-C", proj, "config", "user.email", "repo@example.test").CombinedOutput(); err != nil {
				t.Fatalf("git config: %v %s", err, out)
			}
			_ = os.Chtimes(filepath.Join(proj, ".git", "config"), old, old)
			_ = os.Chtimes(filepath.Join(proj, ".git"), old, old)
		}, "Grace", "repo@example.test", 4},
		{func() {}, "Grace", "repo@example.test", 4},
	} {
		step.change()
		n, e := get()
		if n != step.name || e != step.email || runs != step.runs {
			t.Errorf("step %d: %q %q after %d git runs; want %q %q after %d", i, n, e, runs, step.name, step.email, step.runs)
		}
	}
	// Other keys are not cached.
	f := cachedGitConfig(run, proj, cache)
	if _, err := f(context.Background(), "core.editor"); err != nil {
		t.Fatal(err)
	}
	if runs != 5 {
		t.Errorf("core.editor: %d runs", runs)
	}
}

func TestCachedGitConfigDoesNotCacheAFreshlyChangedFile(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = Now\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	for i := 0; i < 2; i++ {
		n, err := CachedGitConfig("", cache)(context.Background(), "user.name")
		if err != nil || n != "Now" {
			t.Fatalf("%q %v", n, err)
		}
	}
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("cached a file changed during the fill: %v", ents)
	}
}
