package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/guest"
)

// gitIn runs git in dir with no user or system config.
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

// TestRemoteProjectOverRealSSHD sends a project to a "remote host"
// through a real sshd, and brings a box's commit back, both as real
// bundles over ssh: `corral --host tn config show` in a git project sends
// its branch into the host's clone (corral project receive) and runs
// there; after a second commit only that commit travels; `corral --host
// tn pull` makes the host's corral pull from its box (a running box whose
// guest commands run the real corral-repo against a local repository, the
// box's "ssh" on the host's PATH) and send the box's branches back.
//
// The host's corral needs a user that is not root (Lima, and so corral's
// box service, refuse root): run as root, the test's host corral drops to
// nobody with setpriv; otherwise it runs as the test's user.
func TestRemoteProjectOverRealSSHD(t *testing.T) {
	if testing.Short() {
		t.Skip("builds corral and starts sshd")
	}
	fx := startSSHD(t)
	setpriv := ""
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		p, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("run as root, the host's corral needs setpriv (util-linux) to run as nobody")
		}
		nobody, err := user.Lookup("nobody")
		if err != nil {
			t.Skip("run as root, the host's corral runs as nobody: no such user")
		}
		uid, _ = strconv.Atoi(nobody.Uid)
		gid, _ = strconv.Atoi(nobody.Gid)
		setpriv = fmt.Sprintf("%s --reuid=%d --regid=%d --clear-groups -- ", p, uid, gid)
		// nobody reaches the binaries, scripts and its home through it.
		if err := os.Chmod(fx.dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(fx.dir, "remote-n")
	bin := filepath.Join(fx.dir, "hostbin")
	for _, d := range []string{home, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	boxRepo := filepath.Join(fx.dir, "boxrepo")
	hl := paths.Layout{Home: home}

	// The host's corral: corral-a in its own home, the box's "ssh" first
	// on its PATH.
	wrapper := filepath.Join(bin, "corral")
	write(t, wrapper, fmt.Sprintf("#!/bin/sh\nexport CORRAL_HOME='%s' HOME='%s' PATH='%s':\"$PATH\"\nexec %s'%s' \"$@\"\n",
		home, home, bin, setpriv, fx.corralA))
	// The box's end of the host's pull: the real corral-repo, in boxRepo
	// instead of the guest's clone.
	repoScript := filepath.Join(bin, "corral-repo")
	write(t, repoScript, guest.Repo())
	boxSSH := filepath.Join(bin, "ssh")
	write(t, boxSSH, fmt.Sprintf("#!/bin/sh\nfor a; do last=$a; done\nclone=\"'%s/remote-projects/\"\nexec sh -c \"$(printf '%%s' \"$last\" | sed -e 's#%s#%s#' -e \"s#$clone[a-z0-9-]*'#'%s'#\")\"\n",
		home, guest.RepoPath, repoScript, boxRepo))
	for _, f := range []string{wrapper, repoScript, boxSSH} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	url := fmt.Sprintf("ssh://%s@127.0.0.1:%d", fx.user, fx.port)
	if r := fx.corral(t, fx.corralA, fx.local, "", "host", "add", "tn", url, "--corral", wrapper, "--ssh-config", fx.sshConfig); r.code != 0 {
		t.Fatalf("host add: %+v", r)
	}
	chown := func() {
		t.Helper()
		if setpriv == "" {
			return
		}
		for _, d := range []string{home, boxRepo} {
			_ = filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
				if err == nil {
					err = os.Lchown(p, uid, gid)
				}
				return err
			})
		}
	}
	chown()

	proj := filepath.Join(fx.dir, "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, proj, "init", "-q", "-b", "main")
	write(t, filepath.Join(proj, "README"), "web\n")
	gitIn(t, proj, "add", ".")
	gitIn(t, proj, "commit", "-q", "-m", "first")
	p, err := project.Resolve(proj, paths.Layout{Home: fx.local}.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	clone := hl.RemoteProject(p.Box)

	t.Run("send", func(t *testing.T) {
		got := fx.corralIn(t, proj, fx.corralA, fx.local, "", "--host", "tn", "config", "show", "--origin")
		if got.code != 0 || got.err != "sent branch main to host tn (1 new commit), box "+p.Box+"\n" ||
			!strings.HasPrefix(got.out, "# box "+p.Box+" for "+clone+"\n") ||
			!strings.Contains(got.out, "# from "+hl.ProjectConfig(p.Box)+"\nsource = \"clone\"\n") {
			t.Fatalf("%+v", got)
		}
		if b, err := os.ReadFile(filepath.Join(clone, "README")); err != nil || string(b) != "web\n" {
			t.Errorf("the clone: %q %v", b, err)
		}
		gitIn(t, proj, "commit", "-q", "--allow-empty", "-m", "second")
		got = fx.corralIn(t, proj, fx.corralA, fx.local, "", "--host", "tn", "config", "check")
		if got.code != 0 || got.err != "sent branch main to host tn (1 new commit), box "+p.Box+"\n" {
			t.Errorf("second send: %+v", got)
		}
	})

	t.Run("pull", func(t *testing.T) {
		if _, err := os.Stat(filepath.Join(clone, ".git")); err != nil {
			t.Skip("no clone on the host (send failed)")
		}
		// The host's box of the clone: its metadata and a running Lima
		// instance (live pids), its own repository a clone with a commit.
		meta, _ := json.Marshal(map[string]any{"name": p.Box, "project": clone, "created": time.Now(), "idle_stop": "0s", "vm_type": "qemu", "network": "full"})
		for _, d := range []string{hl.BoxesDir(), filepath.Join(hl.LimaHome(), p.Box)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		write(t, hl.BoxMeta(p.Box), string(meta))
		inst := filepath.Join(hl.LimaHome(), p.Box)
		write(t, filepath.Join(inst, "lima.yaml"), "{}\n")
		write(t, filepath.Join(inst, "ha.pid"), strconv.Itoa(os.Getpid()))
		write(t, filepath.Join(inst, "qemu.pid"), strconv.Itoa(os.Getpid()))
		gitIn(t, fx.dir, "clone", "-q", proj, boxRepo)
		gitIn(t, boxRepo, "commit", "-q", "--allow-empty", "-m", "made in the box")
		tip := gitIn(t, boxRepo, "rev-parse", "main")
		chown()

		got := fx.corralIn(t, proj, fx.corralA, fx.local, "", "--host", "tn", "pull")
		if got.code != 0 || !strings.HasPrefix(got.out, "from box "+p.Box+" into refs/remotes/corral/"+p.Box+"/:\n  main  new  "+tip[:10]+"\n1 new commit:\n") {
			t.Fatalf("%+v", got)
		}
		if ref := gitIn(t, proj, "rev-parse", hostgit.RemotePrefix(p.Box)+"main"); ref != tip {
			t.Errorf("refs/remotes/corral/%s/main = %s, want %s", p.Box, ref, tip)
		}
		// The host pulled into its clone first, as its own pull does.
		if ref := gitIn(t, clone, "-c", "safe.directory=*", "rev-parse", hostgit.RemotePrefix(p.Box)+"main"); ref != tip {
			t.Errorf("the host's clone has %s", ref)
		}
		got = fx.corralIn(t, proj, fx.corralA, fx.local, "", "--host", "tn", "pull")
		if got.code != 0 || got.out != "box "+p.Box+": nothing new\n" {
			t.Errorf("second pull: %+v", got)
		}
	})
}
