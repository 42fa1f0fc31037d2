package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/version"
)

// asCorralEnv makes the test binary corral itself (TestMain): the remote
// host's corral of the fake ssh below.
const asCorralEnv = "CORRAL_CLI_TEST_AS_CORRAL"

func TestMain(m *testing.M) {
	if os.Getenv(asCorralEnv) == "1" {
		os.Exit(Main(os.Args, nil))
	}
	os.Exit(m.Run())
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fakeSSHHost is a "remote host" on this machine: a stand-in for ssh that
// skips ssh's options and the destination and runs the remote command
// with sh -c, as the remote login shell would, under another CORRAL_HOME;
// the host's corral is this test binary. It returns the factory maker
// for the laptop side and the remote home.
func fakeSSHHost(t *testing.T) (newF func() (*Factory, func() (string, string)), remoteHome string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	home, remoteHome := filepath.Join(root, "laptop"), filepath.Join(root, "remote")
	ssh := filepath.Join(root, "ssh")
	script := "#!/bin/sh\nwhile [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift 2\n" +
		"CORRAL_HOME=" + remote.Quote(remoteHome) + " " + asCorralEnv + "=1 exec sh -c \"$1\"\n"
	if err := os.WriteFile(ssh, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	newF = func() (*Factory, func() (string, string)) {
		io, _, out, errOut := Test(false)
		f := &Factory{
			IO:        io,
			Layout:    func() (paths.Layout, error) { return paths.Layout{Home: home}, nil },
			LookupEnv: func(string) (string, bool) { return "", false },
			Remote:    remote.Runner{SSH: ssh},
		}
		return f, func() (string, string) { return out.String(), errOut.String() }
	}
	f, out := newF()
	if code := Run(f, []string{"host", "add", "t", "ssh://me@t", "--corral", exe}); code != 0 {
		t.Fatal(out())
	}
	return newF, remoteHome
}

// TestHostSendsTheProject: a project command with --host and no -C, in a
// git project, sends the checked-out branch to the host's corral (a real
// process behind a fake ssh) and runs there in its clone: the host's
// config of that directory is the box's, with the laptop's box name and
// source = "clone" from its trusted layer. A second command sends only
// the new commit.
func TestHostSendsTheProject(t *testing.T) {
	newF, remoteHome := fakeSSHHost(t)
	proj := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, proj, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(proj, "README"), []byte("web\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, proj, "add", ".")
	gitT(t, proj, "commit", "-q", "-m", "first")
	t.Chdir(proj)
	f, out := newF()
	l, _ := f.Layout()
	p, err := project.Resolve(proj, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	rl := paths.Layout{Home: remoteHome}
	clone := rl.RemoteProject(p.Box)

	code := Run(f, []string{"--host", "t", "config", "show", "--origin"})
	o, e := out()
	if code != 0 || e != "sent branch main to host t (1 new commit), box "+p.Box+"\n" ||
		!strings.HasPrefix(o, "# box "+p.Box+" for "+clone+"\n") ||
		!strings.Contains(o, "# from "+rl.ProjectConfig(p.Box)+"\nsource = \"clone\"\n") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, o, e)
	}
	if b, err := os.ReadFile(filepath.Join(clone, "README")); err != nil || string(b) != "web\n" {
		t.Errorf("the clone: %q %v", b, err)
	}

	gitT(t, proj, "commit", "-q", "--allow-empty", "-m", "second")
	f, out = newF()
	code = Run(f, []string{"--host", "t", "config", "check"})
	if o, e := out(); code != 0 || e != "sent branch main to host t (1 new commit), box "+p.Box+"\n" {
		t.Errorf("second: exit %d %q %q", code, o, e)
	}
	if got, want := gitT(t, clone, "rev-parse", "HEAD"), gitT(t, proj, "rev-parse", "HEAD"); got != want {
		t.Errorf("clone HEAD %s, want %s", got, want)
	}

	// A detached HEAD is refused with what to do; so is a box name the
	// host refuses (its message and hint come back, naming the host).
	gitT(t, proj, "checkout", "-q", "--detach")
	f, out = newF()
	code = Run(f, []string{"--host", "t", "info"})
	if o, e := out(); code != 1 || o != "" || !strings.Contains(e, "HEAD is detached") || !strings.Contains(e, "hint: check out a branch") {
		t.Errorf("detached: exit %d %q %q", code, o, e)
	}
	gitT(t, proj, "checkout", "-q", "main")
	if err := os.WriteFile(rl.ProjectConfig(p.Box), []byte("source = \"mount\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, out = newF()
	code = Run(f, []string{"--host", "t", "info"})
	if o, e := out(); code != 1 || o != "" || !strings.HasPrefix(e, "corral: host t: corral project receive "+p.Box+" failed: receiving the project for box "+p.Box+": ") ||
		!strings.Contains(e, "\nhint: a project sent from another machine must be a clone") {
		t.Errorf("refused there: exit %d %q %q", code, o, e)
	}
}

// pullHost answers ssh as a host whose box has the branches of boxRepo:
// the version check, then `corral project pull-bundle BOX` with the haves
// it reads.
type pullHost struct {
	t       *testing.T
	boxRepo string
	calls   []string
}

func (h *pullHost) exec(_ context.Context, _ string, argv []string, stdin io.Reader, stdout, _ io.Writer) (int, error) {
	cmd := argv[len(argv)-1]
	h.calls = append(h.calls, cmd)
	if strings.HasSuffix(cmd, `'version' '--json'`) {
		io.WriteString(stdout, `{"version":"`+version.Version+`","commit":"`+version.Commit+`"}`)
		return 0, nil
	}
	haves, err := hostgit.ReadHaves(bufio.NewReader(stdin))
	if err != nil {
		h.t.Error(err)
		return 1, nil
	}
	repo, err := hostgit.Open(h.boxRepo)
	if err != nil {
		h.t.Error(err)
		return 1, nil
	}
	heads, err := repo.Tips(context.Background(), "refs/heads/")
	if err != nil {
		h.t.Error(err)
		return 1, nil
	}
	if err := repo.WriteBranches(context.Background(), stdout, heads, haves, h.t.TempDir()); err != nil {
		h.t.Error(err)
		return 1, nil
	}
	return 0, nil
}

// TestHostPull: `corral --host NAME pull` asks the host's corral for the
// box's branches (project pull-bundle, the project's box by default) and
// fetches them here as a local pull does, printing the same.
func TestHostPull(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://gpu")
	proj := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, proj, "init", "-q", "-b", "main")
	gitT(t, proj, "commit", "-q", "--allow-empty", "-m", "first")
	boxRepo := filepath.Join(t.TempDir(), "box")
	gitT(t, filepath.Dir(boxRepo), "clone", "-q", proj, boxRepo)
	gitT(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "made in the box")
	p, err := project.Resolve(proj, paths.Layout{Home: home}.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	ph := &pullHost{t: t, boxRepo: boxRepo}
	f, _, out := hostFactory(t, home, false)
	f.Remote = remote.Runner{Exec: ph.exec}
	code := Run(f, []string{"--host", "gpu", "-C", proj, "pull"})
	o, e := out()
	tip := gitT(t, boxRepo, "rev-parse", "main")
	ref := "corral/" + p.Box + "/main"
	want := "from box " + p.Box + " into refs/remotes/corral/" + p.Box + "/:\n  main  new  " + tip[:10] + "\n1 new commit:\n  " +
		gitT(t, proj, "log", "--format=%h %s", "-n1", tip) + "\nreview: git log -p HEAD.." + ref + "\nmerge:  git merge " + ref + "\n"
	check(t, code, o, e, 0, want, "")
	if got := gitT(t, proj, "rev-parse", hostgit.RemotePrefix(p.Box)+"main"); got != tip {
		t.Errorf("refs/remotes/corral/%s/main = %s, want %s", p.Box, got, tip)
	}
	if len(ph.calls) != 2 || ph.calls[1] != "'corral' --host local 'project' 'pull-bundle' '"+p.Box+"'" {
		t.Errorf("ssh: %q", ph.calls)
	}

	// Again, by name and as JSON: nothing new; the haves left the history out.
	f, _, out = hostFactory(t, home, false)
	f.Remote = remote.Runner{Exec: ph.exec}
	code = Run(f, []string{"--host", "gpu", "-C", proj, "pull", "--json", "--allow-submodules", p.Box})
	o, _ = out()
	var got pullResultJSON
	if code != 0 || json.Unmarshal([]byte(o), &got) != nil || got.Box != p.Box || len(got.Updates) != 0 {
		t.Errorf("second pull: exit %d %s", code, o)
	}
	if last := ph.calls[len(ph.calls)-1]; !strings.HasSuffix(last, "'"+p.Box+"' '--allow-submodules'") {
		t.Errorf("ssh: %q", last)
	}

	// Outside a repository: refused here, before ssh.
	f, fr, out := hostFactory(t, home, false)
	code = Run(f, []string{"--host", "gpu", "-C", t.TempDir(), "pull"})
	if o, e := out(); code != 1 || len(fr.calls) != 0 || !strings.Contains(e, "on host gpu: not a git repository") {
		t.Errorf("no repository: exit %d %q %q %q", code, o, e, fr.calls)
	}
}
