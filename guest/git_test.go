package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitWrapperSaysWhy runs the real wrapper over the real git: a failed
// init in the project gets corral's line, with git's exit code; other
// failures and failures outside the project get git's output alone.
func TestGitWrapperSaysWhy(t *testing.T) {
	if _, err := os.Stat("/usr/bin/git"); err != nil {
		t.Skip("no /usr/bin/git")
	}
	dir := t.TempDir()
	etc, proj, other := filepath.Join(dir, "etc"), filepath.Join(dir, "proj"), filepath.Join(dir, "other")
	for _, d := range []string{etc, filepath.Join(proj, "sub"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(etc, "git-shadow.env"), []byte("PROJECT='"+proj+"'\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A .git git cannot use makes init fail, as the host's refusal does
	// (as root too, which permissions would not).
	for _, d := range []string{filepath.Join(proj, "sub"), other} {
		if err := os.WriteFile(filepath.Join(d, ".git"), []byte("junk\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(dir, "git")
	if err := os.WriteFile(script, []byte(gitWrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(cwd string, args ...string) (string, int) {
		cmd := exec.Command(script, args...)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), "CORRAL_ETC="+etc, "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return string(out), code
	}
	const why = "corral: this box cannot make a git repository inside the project"
	for _, c := range []struct {
		cwd  string
		args []string
		line bool
	}{
		{filepath.Join(proj, "sub"), []string{"init", "-q"}, true},
		{dir, []string{"-C", filepath.Join(proj, "sub"), "init", "-q"}, true},
		{dir, []string{"init", "-q", filepath.Join(proj, "sub")}, true},
		{filepath.Join(proj, "sub"), []string{"status"}, false},
		{other, []string{"init", "-q"}, false},
	} {
		out, code := run(c.cwd, c.args...)
		if code == 0 {
			t.Errorf("git %v in %s succeeded:\n%s", c.args, c.cwd, out)
		}
		if got := strings.Contains(out, why); got != c.line {
			t.Errorf("git %v in %s: corral's line %v, want %v:\n%s", c.args, c.cwd, got, c.line, out)
		}
	}
	if out, code := run(other, "--version"); code != 0 || !strings.HasPrefix(out, "git version") {
		t.Errorf("git --version through the wrapper: %d %q", code, out)
	}
}
