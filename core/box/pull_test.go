package box

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/guest"
)

func gitIn(t *testing.T, dir string, args ...string) string {
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

// pullFixture is a "running" box whose guest commands run locally: the
// real corral-repo script, against boxRepo (a clone of the project).
func pullFixture(t *testing.T) (s *Service, box, project, boxRepo string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	r = reresolve(t, s, r, "agent = \"shell\"\n")
	project, box = r.Project.Dir, r.Project.Box
	gitIn(t, project, "init", "-q", "-b", "main")
	gitIn(t, project, "commit", "-q", "--allow-empty", "-m", "base")
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Layout.LimaHome(), box)
	must(t, os.WriteFile(filepath.Join(dir, "ha.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600))
	must(t, os.WriteFile(filepath.Join(dir, "qemu.pid"), []byte(fmt.Sprint(os.Getpid())), 0o600))
	boxRepo = filepath.Join(t.TempDir(), "box")
	gitIn(t, filepath.Dir(boxRepo), "clone", "-q", project, boxRepo)
	script := filepath.Join(t.TempDir(), "corral-repo")
	must(t, os.WriteFile(script, []byte(guest.Repo()), 0o755))
	s.GuestCommand = func(ctx context.Context, argv []string) *exec.Cmd {
		remote := argv[len(argv)-1]
		remote = strings.Replace(remote, guest.RepoPath, script, 1)
		remote = strings.Replace(remote, shellQuote(project), shellQuote(boxRepo), 1)
		return exec.CommandContext(ctx, "sh", "-c", remote)
	}
	return s, box, project, boxRepo
}

func TestPullThroughTheGuestScript(t *testing.T) {
	s, box, project, boxRepo := pullFixture(t)
	ctx := context.Background()
	gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "from the box")
	gitIn(t, boxRepo, "checkout", "-q", "-b", "topic")
	gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "on a topic")

	n, err := s.NewCommits(ctx, box)
	if err != nil || n != 2 {
		t.Fatalf("NewCommits = %d, %v", n, err)
	}
	res, err := s.Pull(ctx, box, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.NewCommits != 2 || len(res.Updates) != 2 {
		t.Errorf("result %+v", res)
	}
	if got := gitIn(t, project, "rev-parse", hostgit.RemotePrefix(box)+"topic"); got != gitIn(t, boxRepo, "rev-parse", "topic") {
		t.Errorf("topic = %s", got)
	}
	// Nothing new: a second pull changes nothing and the count is 0.
	if n, err := s.NewCommits(ctx, box); err != nil || n != 0 {
		t.Errorf("NewCommits after pull = %d, %v", n, err)
	}
	res, err = s.Pull(ctx, box, PullOptions{})
	if err != nil || len(res.Updates) != 0 || res.NewCommits != 0 {
		t.Errorf("second pull %+v %v", res, err)
	}
	if ents, _ := os.ReadDir(s.Layout.RunDir()); len(ents) > 0 {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".bundle") {
				t.Errorf("bundle left behind: %s", e.Name())
			}
		}
	}
}

// TestPullKeepsAnUnchangedBranch: the box commits only on a new branch;
// main, unchanged, is left out of the bundle but still arrives (from the
// box's branch list), and the next pull has nothing new (the e2e pull
// once listed main as new on the second pull).
func TestPullKeepsAnUnchangedBranch(t *testing.T) {
	s, box, project, boxRepo := pullFixture(t)
	ctx := context.Background()
	gitIn(t, boxRepo, "checkout", "-q", "-b", "feature")
	gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "made in the box")
	gitIn(t, boxRepo, "checkout", "-q", "main")
	res, err := s.Pull(ctx, box, PullOptions{})
	if err != nil || len(res.Updates) != 2 || res.NewCommits != 1 {
		t.Fatalf("first pull %+v %v", res, err)
	}
	if got := gitIn(t, project, "rev-parse", hostgit.RemotePrefix(box)+"main"); got != gitIn(t, boxRepo, "rev-parse", "main") {
		t.Errorf("main = %s", got)
	}
	if res, err := s.Pull(ctx, box, PullOptions{}); err != nil || len(res.Updates) != 0 {
		t.Errorf("second pull %+v %v", res, err)
	}
}

func TestPullRefusesAnOversizedBundle(t *testing.T) {
	s, box, project, boxRepo := pullFixture(t)
	big := make([]byte, 64<<10)
	_, _ = rand.Read(big) // incompressible
	must(t, os.WriteFile(filepath.Join(boxRepo, "big"), big, 0o644))
	gitIn(t, boxRepo, "add", "big")
	gitIn(t, boxRepo, "commit", "-q", "-m", "big")
	_, err := s.Pull(context.Background(), box, PullOptions{MaxBundle: 1024})
	if !errors.Is(err, hostgit.ErrBundle) {
		t.Fatalf("err = %v", err)
	}
	if out := gitIn(t, project, "for-each-ref", "refs/remotes/"); out != "" {
		t.Errorf("refs arrived: %s", out)
	}
}

func TestPullNeedsARunningBox(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(context.Background(), r.Project.Box, PullOptions{}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("err = %v", err)
	}
}

// TestPullRefusesASubmodule is the attack through the real guest script:
// the box commits a gitlink and makes the nested repository (with a
// core.fsmonitor) in its work tree. Pull refuses it with a hint, the
// host's refs and work tree stay as they were, and a denial is audited;
// AllowSubmodules takes it and names the path.
func TestPullRefusesASubmodule(t *testing.T) {
	s, box, project, boxRepo := pullFixture(t)
	ctx := context.Background()
	nested := filepath.Join(boxRepo, "evil")
	gitIn(t, boxRepo, "init", "-q", nested)
	gitIn(t, nested, "config", "core.fsmonitor", "touch /tmp/pwned-by-the-box")
	gitIn(t, nested, "commit", "-q", "--allow-empty", "-m", "nested")
	gitIn(t, boxRepo, "update-index", "--add", "--cacheinfo", "160000,"+gitIn(t, nested, "rev-parse", "HEAD")+",evil")
	gitIn(t, boxRepo, "commit", "-q", "-m", "a submodule")
	refs := func() string { return gitIn(t, project, "for-each-ref") }
	before := refs()
	files, _ := os.ReadDir(project)

	_, err := s.Pull(ctx, box, PullOptions{})
	if !errors.Is(err, hostgit.ErrSubmodules) || !strings.Contains(err.Error(), "evil (gitlink") {
		t.Fatalf("err = %v", err)
	}
	if h := hint.Of(err); !strings.Contains(h, "corral pull --allow-submodules "+box) {
		t.Errorf("hint %q", h)
	}
	if refs() != before {
		t.Error("a refused pull changed the host's refs")
	}
	if now, _ := os.ReadDir(project); len(now) != len(files) {
		t.Error("a refused pull changed the host's work tree")
	}
	evs, _ := audit.Read(s.Layout.AuditLog(), audit.Filter{})
	if last := evs[len(evs)-1]; last.Kind != audit.KindPull || !strings.Contains(fmt.Sprint(last.Fields["refused"]), "evil") {
		t.Errorf("refusal not audited: %+v", last)
	}

	res, err := s.Pull(ctx, box, PullOptions{AllowSubmodules: true})
	if err != nil || len(res.Submodules) != 1 || res.Submodules[0].Path != "evil" {
		t.Fatalf("allowed: %+v %v", res, err)
	}
}
