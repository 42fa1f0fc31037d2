//go:build e2e

package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPullCloneAndAgentState runs two boxes one after the other (about two
// TCG boots, 3-5 minutes with the golden image already built): box A
// mounts a git project, box B clones another one (source = "clone").
//   - Agent state: both boxes start from the host-owned template; a hook A
//     writes into its agent settings is not seen by B, and the template
//     stays unchanged.
//   - Pull: commits made in A arrive on the host as refs/remotes/corral/A/*
//     after `corral pull`, and nothing else in the host's .git/config,
//     hooks/ or local branches changed.
//   - The git shadow (gitShadowSubtests) on A, after the pull.
//   - Broker mode (B's repository asks for it): no sudo in the box.
//   - Clone: B sees the committed tree, not the host's uncommitted files,
//     and writes nothing into the host work tree; its commits come back
//     with `corral pull`.
func TestPullCloneAndAgentState(t *testing.T) {
	x := setup(t)
	base := filepath.Dir(x.project)
	template := filepath.Join(x.home, "agent-templates", "shell")
	const seeded = `{"corral-e2e": "from the host template"}` + "\n"
	must(t, os.MkdirAll(template, 0o700))
	must(t, os.WriteFile(filepath.Join(template, "settings.json"), []byte(seeded), 0o600))

	a := x.project2(t, filepath.Join(base, "pull-a"), "")
	// B's repository also tightens the network to broker mode (a
	// repository may): that such a box has no sudo is checked on it.
	b := x.project2(t, filepath.Join(base, "pull-b"), "source = \"clone\"\nnetwork = \"broker\"\n")
	// A's project has an initialized submodule (sub) and an uninitialized
	// gitlink (vendor/lib): gitlinkSubtests prove the box cannot make the
	// host's git run anything through them.
	withSubmodules(t, a.project)
	defer a.corral("rm", "-f")
	defer b.corral("rm", "-f")
	// Uncommitted host files a clone must not carry.
	must(t, os.WriteFile(filepath.Join(b.project, "uncommitted.txt"), []byte("host only\n"), 0o644))

	hook := `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/planted-by-a"}]}]}}`
	gitBox := []string{"git", "-c", "user.name=box", "-c", "user.email=box@example.test"}

	t.Run("box A starts from the template and plants a hook in its own state", func(t *testing.T) {
		a.t = t
		a.ok("up")
		if got := a.ok("run", "--", "cat", "/corral/agents/shell/settings.json"); got != seeded {
			t.Errorf("box A's seeded settings = %q", got)
		}
		if _, _, code := a.corral("run", "--", "mountpoint", "-q", "/corral/agents/shell"); code == 0 {
			t.Error("box A's agent state is a mount")
		}
		a.ok("run", "--", "sh", "-c", "printf '%s\\n' \"$1\" > /corral/agents/shell/settings.json", "sh", hook)
	})

	t.Run("commits made in box A arrive with corral pull and nothing else changes", func(t *testing.T) {
		a.t = t
		a.ok("run", "--", "git", "checkout", "-q", "-b", "feature")
		a.ok("run", "--", "sh", "-c", "echo from-the-box > box.txt")
		a.ok("run", "--", "git", "add", "box.txt")
		a.ok(append([]string{"run", "--"}, append(gitBox, "commit", "-q", "-m", "made in box A")...)...)
		aFeature := strings.TrimSpace(a.ok("run", "--", "git", "rev-parse", "feature"))
		a.ok("run", "--", "git", "checkout", "-q", "main")
		// Under the git shadow the host has no feature branch yet; without
		// it the box's commit went straight into the host's .git, and the
		// pull has nothing new to list.
		shadowed := exec.Command("git", "-C", a.project, "rev-parse", "--verify", "-q", "refs/heads/feature").Run() != nil
		before := gitState(t, a.project)
		out := a.ok("pull")
		if !strings.Contains(out, "feature") || (shadowed && !strings.Contains(out, "made in box A")) {
			t.Errorf("pull output:\n%s", out)
		}
		if got := gitOnHost(t, a.project, "rev-parse", "refs/remotes/corral/"+a.box+"/feature"); got != aFeature {
			t.Errorf("refs/remotes/corral/%s/feature = %q, box has %q", a.box, got, aFeature)
		}
		if after := gitState(t, a.project); after != before {
			t.Errorf("the pull changed the host's .git/config, hooks or branches:\nbefore %s\nafter  %s", before, after)
		}
		if out := a.ok("pull"); !strings.Contains(out, "nothing new") {
			t.Errorf("second pull:\n%s", out)
		}
	})

	// The git shadow, proved on the same running box (it saves a boot).
	gitShadowSubtests(t, a, snapshotGitDir(t, filepath.Join(a.project, ".git")))
	a.ok("stop")

	t.Run("box B does not see box A's hook; the template is unchanged", func(t *testing.T) {
		b.t = t
		b.ok("up")
		if got := b.ok("run", "--", "cat", "/corral/agents/shell/settings.json"); got != seeded {
			t.Errorf("box B's agent settings = %q (box A's hook leaked?)", got)
		}
		got, err := os.ReadFile(filepath.Join(template, "settings.json"))
		if err != nil || string(got) != seeded {
			t.Errorf("host template now %q, %v", got, err)
		}
	})

	t.Run("clone mode: the box has its own clone and no project mount", func(t *testing.T) {
		b.t = t
		if got := b.ok("run", "--", "git", "log", "--format=%s"); got != "first commit\n" {
			t.Errorf("box B's log = %q", got)
		}
		if _, _, code := b.corral("run", "--", "test", "-e", "uncommitted.txt"); code == 0 {
			t.Error("box B sees an uncommitted host file")
		}
		if _, _, code := b.corral("run", "--", "mountpoint", "-q", b.project); code == 0 {
			t.Error("the project is mounted in a clone box")
		}
		if _, _, code := b.corral("run", "--", "sudo", "-n", "true"); code == 0 {
			t.Error("sudo works in a broker-mode box")
		}
		b.ok("run", "--", "sh", "-c", "echo from-the-clone > clone.txt")
		if _, err := os.Stat(filepath.Join(b.project, "clone.txt")); err == nil {
			t.Error("a file written in the clone appeared in the host work tree")
		}
	})

	t.Run("clone mode: corral pull brings the clone's commits back", func(t *testing.T) {
		b.t = t
		hostMain := gitOnHost(t, b.project, "rev-parse", "main")
		b.ok("run", "--", "git", "add", "clone.txt")
		b.ok(append([]string{"run", "--"}, append(gitBox, "commit", "-q", "-m", "made in the clone")...)...)
		want := strings.TrimSpace(b.ok("run", "--", "git", "rev-parse", "main"))
		out := b.ok("pull")
		if !strings.Contains(out, "1 new commit:") || !strings.Contains(out, "made in the clone") {
			t.Errorf("pull output:\n%s", out)
		}
		if got := gitOnHost(t, b.project, "rev-parse", "refs/remotes/corral/"+b.box+"/main"); got != want {
			t.Errorf("pulled main = %q, want %q", got, want)
		}
		if got := gitOnHost(t, b.project, "rev-parse", "main"); got != hostMain {
			t.Errorf("the host's main moved: %s", got)
		}
		if _, err := os.Stat("/tmp/planted-by-a"); err == nil {
			t.Error("box A's hook ran on the host")
		}
	})
	t.Run("every command stops an idle box first", func(t *testing.T) {
		a.t = t
		cliSweepsIdle(t, a)
	})
	t.Run("gc removes an orphaned instance and a box deleted behind corral's back, broker and all", func(t *testing.T) {
		b.t = t
		gcLeftovers(t, b)
	})
}

// project2 is another project of the suite, a git repository with one
// commit, and its own box (name from corral config show).
func (x *h) project2(t *testing.T, dir, repoConfig string) *h {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "README.txt"), []byte("committed\n"), 0o644))
	if repoConfig != "" {
		must(t, os.WriteFile(filepath.Join(dir, ".corral.toml"), []byte(repoConfig), 0o644))
	}
	gitOnHost(t, dir, "init", "-q", "-b", "main")
	gitOnHost(t, dir, "add", ".")
	gitOnHost(t, dir, "commit", "-q", "-m", "first commit")
	y := *x
	y.t, y.project = t, dir
	out := y.ok("config", "show", "--json")
	var cfg struct{ Box string }
	must(t, json.Unmarshal([]byte(out), &cfg))
	y.box = cfg.Box
	return &y
}

// gitOnHost is hostGit (gitshadow_e2e_test.go) that fails the test on
// error and trims the output.
func gitOnHost(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := hostGit(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return strings.TrimSpace(out)
}

// gitState is .git/config, the hooks directory listing and the local
// branches: what a pull must not change.
func gitState(t *testing.T, dir string) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(dir, ".git", "config"))
	must(t, err)
	var hooks []string
	ents, _ := os.ReadDir(filepath.Join(dir, ".git", "hooks"))
	for _, e := range ents {
		info, _ := e.Info()
		b, _ := os.ReadFile(filepath.Join(dir, ".git", "hooks", e.Name()))
		hooks = append(hooks, e.Name()+":"+info.Mode().String()+":"+string(b))
	}
	return string(cfg) + "|" + strings.Join(hooks, ",") + "|" + gitOnHost(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/")
}
