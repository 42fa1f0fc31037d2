//go:build e2e

package e2e

import (
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/dotgit"
)

// hostGit runs the host's git in dir with no user or system config, as
// the user reviewing the box's work would (plus a fixed identity).
func hostGit(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=host", "GIT_AUTHOR_EMAIL=host@example.test", "GIT_COMMITTER_NAME=host", "GIT_COMMITTER_EMAIL=host@example.test")
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// snapshotGitDir reads every file under dir (path -> content).
func snapshotGitDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	must(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		m[strings.TrimPrefix(p, dir)] = string(b)
		return err
	}))
	return m
}

// gitShadowSubtests prove, on a running box of a git project (network
// full, so the box user has sudo: guest root), that nothing in the box can
// change what the host's git executes. before is snapshotGitDir of the
// host's .git, taken after the last thing the host itself did to it. They
// run on TestPullCloneAndAgentState's box A after its pull (no boot of
// their own, about 30 s); the last one unmounts the shadow as guest root,
// so the box's git is read-only afterwards. The opt-out (git_shadow =
// false) and the host guard are proved on TestHostFunnel's box
// (gitGuardOptOut), which has it from the start.
func gitShadowSubtests(t *testing.T, x *h, before map[string]string) {
	proj := x.project
	gitDir := filepath.Join(proj, ".git")
	marker := filepath.Join(filepath.Dir(proj), "git-shadow-pwned")
	hostile := "touch " + marker + "; false"
	pidB, err := os.ReadFile(filepath.Join(x.home, "lima", x.box, "qemu.pid"))
	must(t, err)
	pid := strings.TrimSpace(string(pidB))

	t.Run("qemu runs with .git read-only, no capabilities, as the user", func(t *testing.T) {
		x.t = t
		mi, err := os.ReadFile("/proc/" + pid + "/mountinfo")
		must(t, err)
		found := false
		for _, line := range strings.Split(string(mi), "\n") {
			f := strings.Fields(line)
			if len(f) > 5 && f[4] == gitDir {
				found = strings.HasPrefix(f[5], "ro")
			}
		}
		if !found {
			t.Errorf("no read-only mount at %s in qemu's mount namespace", gitDir)
		}
		st, err := os.ReadFile("/proc/" + pid + "/status")
		must(t, err)
		if !strings.Contains(string(st), "CapEff:\t0000000000000000") {
			t.Errorf("qemu has capabilities:\n%s", st)
		}
		var s syscall.Stat_t
		must(t, syscall.Stat("/proc/"+pid, &s))
		if int(s.Uid) != os.Getuid() {
			t.Errorf("qemu runs as uid %d, want %d", s.Uid, os.Getuid())
		}
		if !strings.Contains(x.qemuCmdline(x.box), "qemu-system") {
			t.Errorf("qemu.pid does not name qemu: %s", x.qemuCmdline(x.box))
		}
	})
	t.Run("git in the box works and writes only the shadow", func(t *testing.T) {
		x.t = t
		script := `set -e
git config core.fsmonitor "$1"
printf '#!/bin/sh\n%s\n' "$1" > .git/hooks/pre-commit
chmod +x .git/hooks/pre-commit
git -c core.fsmonitor=false -c core.hooksPath=/dev/null -c user.name=box -c user.email=box@example.test commit -q --allow-empty -m "from the box"
git branch from-the-box
git stash list >/dev/null
echo made-in-box > box.txt
git log --oneline | wc -l`
		// One commit more than the host's branch has.
		want := strings.Count(gitOnHost(t, proj, "log", "--oneline"), "\n") + 2
		if got := x.ok("run", "--", "sh", "-c", script, "sh", hostile); strings.TrimSpace(got) != strconv.Itoa(want) {
			t.Errorf("box log has %q commits, want %d", got, want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the hostile command ran")
		}
		var s syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(proj, "box.txt"), &s))
		if int(s.Uid) != os.Getuid() {
			t.Errorf("a file the box wrote is owned by uid %d, want %d", s.Uid, os.Getuid())
		}
	})
	t.Run("guest root who unmounts the shadow still cannot write .git", func(t *testing.T) {
		x.t = t
		script := `umount -l "$1/.git" || true
umount -l /run/corral/git-lower/project || true
mount -o remount,rw "$1" || true
for f in config hooks/pre-commit info/attributes; do
	if (echo "[core]
	fsmonitor = $2" >> "$1/.git/$f") 2>/dev/null; then echo "WROTE $f"; fi
done
if mv "$1/.git" "$1/.git-moved" 2>/dev/null; then echo "MOVED"; fi
findmnt -n -o FSTYPE --mountpoint "$1/.git" || echo "no mount at .git"`
		out, errOut, code := x.corral("run", "--", "sudo", "sh", "-c", script, "sh", proj, hostile)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "MOVED") || code != 0 {
			t.Errorf("guest root: code %d\n%s%s", code, out, errOut)
		}
		t.Logf("after unmounting in the guest: %s", strings.TrimSpace(out))
	})
	t.Run("the host's .git is unchanged and host git runs nothing", func(t *testing.T) {
		x.t = t
		after := snapshotGitDir(t, gitDir)
		for p, v := range after {
			if before[p] != v {
				t.Errorf("host .git%s changed: %q", p, v)
			}
		}
		if len(after) != len(before) {
			t.Errorf("host .git has %d files, had %d", len(after), len(before))
		}
		for _, args := range [][]string{{"status"}, {"add", "box.txt"}, {"commit", "-q", "-m", "host commit"}} {
			if o, err := hostGit(t, proj, args...); err != nil {
				t.Errorf("host git %v: %v %s", args, err, o)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("host git ran a command from the box")
		}
	})
	gitlinkSubtests(t, x, hostile, marker)
}

// noGitNamesMadeByTheBox fails if any entry under proj other than the
// allowed ones (relative paths) is a name git takes for .git, or HEAD.
func noGitNamesMadeByTheBox(t *testing.T, proj string, allowed ...string) {
	t.Helper()
	filepath.WalkDir(proj, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == proj {
			return nil
		}
		rel, _ := filepath.Rel(proj, p)
		if dotgit.Is(d.Name()) || d.Name() == "HEAD" {
			if !slices.Contains(allowed, rel) {
				t.Errorf("the work tree has %s, which the box made", rel)
			}
			return fs.SkipDir
		}
		return nil
	})
}

// gitGuardOptOut runs on TestHostFunnel's box, whose git project has the
// opt-out (git_shadow = false) from the start: no shadow, no read-only
// .git, so guest root writes the host's .git, and the host guard must
// revert what git executes and report it. On that box it costs no boot of
// its own (about 20 s).
func gitGuardOptOut(t *testing.T, x *h) {
	proj := x.project
	gitDir := filepath.Join(proj, ".git")
	marker := filepath.Join(filepath.Dir(proj), "git-guard-pwned")
	hostile := "touch " + marker + "; false"
	cfgBefore, err := os.ReadFile(filepath.Join(gitDir, "config"))
	must(t, err)
	x.ok("run", "--", "sudo", "sh", "-c", `umount -l "$1/.git" 2>/dev/null; git config --file "$1/.git/config" core.fsmonitor "$2"; printf '#!/bin/sh\n%s\n' "$2" > "$1/.git/hooks/pre-commit"; chmod +x "$1/.git/hooks/pre-commit"`, "sh", proj, hostile)
	_, errOut, code := x.corral("ls")
	if code != 0 || !strings.Contains(errOut, "changed what git executes") || !strings.Contains(errOut, "modified "+filepath.Join(gitDir, "config")) ||
		!strings.Contains(errOut, "added "+filepath.Join(gitDir, "hooks", "pre-commit")) {
		t.Errorf("no guard report: code %d stderr %q", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != string(cfgBefore) {
		t.Errorf(".git/config not reverted:\n%s", b)
	}
	for _, args := range [][]string{{"status"}, {"commit", "-q", "--allow-empty", "-m", "after the guard"}} {
		if o, err := hostGit(t, proj, args...); err != nil {
			t.Errorf("host git %v: %v %s", args, err, o)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("host git ran a command from the box")
	}
	audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
	if !strings.Contains(string(audit), `"kind":"git-guard"`) {
		t.Error("no git-guard event in the audit log")
	}
	if out, _, _ := x.corral("doctor", x.box); !strings.Contains(out, "host repository: git_shadow = false") {
		t.Errorf("doctor does not show the opt-out:\n%s", out)
	}
	// The event-driven guard (core/gitwatch, in the broker): a repository
	// the box makes anywhere in the tree is in the audit log within 2 s.
	x.ok("run", "--", "sh", "-c", `mkdir -p "$1/deep/er" && git init -q "$1/deep/er"`, "sh", proj)
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
		if strings.Contains(string(b), `"kind":"nested-git"`) && strings.Contains(string(b), filepath.Join(proj, "deep", "er", ".git")) && strings.Contains(string(b), `"source":"watch"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("no nested-git event from the watch within 2 s of the box's git init:\n%s", b)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out := x.ok("ls"); !strings.Contains(out, "a repository entry appeared in the work tree: "+filepath.Join(proj, "deep", "er", ".git")) {
		t.Errorf("corral ls does not name the repository the box made:\n%s", out)
	}
	x.ok("run", "--", "rm", "-rf", "deep")
}

// withSubmodules gives the project (a committed git repository) an
// initialized submodule "sub", cloned from a sibling repository, and an
// uninitialized gitlink "vendor/lib" (its directory empty, as git leaves
// one), committed.
func withSubmodules(t *testing.T, proj string) {
	t.Helper()
	child := proj + "-child"
	must(t, os.MkdirAll(child, 0o755))
	gitOnHost(t, child, "init", "-q", "-b", "main")
	gitOnHost(t, child, "commit", "-q", "--allow-empty", "-m", "child")
	gitOnHost(t, proj, "-c", "protocol.file.allow=always", "submodule", "add", "-q", child, "sub")
	gitOnHost(t, proj, "update-index", "--add", "--cacheinfo", "160000,"+gitOnHost(t, child, "rev-parse", "HEAD")+",vendor/lib")
	must(t, os.MkdirAll(filepath.Join(proj, "vendor", "lib"), 0o755))
	gitOnHost(t, proj, "commit", "-q", "-m", "submodules")
}

// gitlinkSubtests: the box (its user, then guest root) plants
// core.fsmonitor and hooks in the initialized submodule, in the
// uninitialized gitlink path and in a new nested repository; the host's
// git status, diff and commit run none of it. On Linux qemu the host binds
// sub/.git read-only and mounts a directory of the box's own over
// vendor/lib in qemu's namespace, which guest root cannot undo.
func gitlinkSubtests(t *testing.T, x *h, hostile, marker string) {
	proj := x.project
	subGit, err := os.ReadFile(filepath.Join(proj, "sub", ".git"))
	must(t, err)
	plant := `cd "$1"
git -C sub config core.fsmonitor "$2" || true
(printf '#!/bin/sh\n%s\n' "$2" > sub/.git) 2>/dev/null && echo "WROTE sub/.git"
git init -q vendor/lib && git -C vendor/lib config core.fsmonitor "$2" && echo "initialized vendor/lib"
git init -q nested 2>&1 && git -C nested config core.fsmonitor "$2" && echo "made nested"
true
`
	t.Run("the box plants git config in submodule paths and a nested repository", func(t *testing.T) {
		x.t = t
		out := x.ok("run", "--", "sh", "-c", plant, "sh", proj, hostile)
		// vendor/lib is the box's own directory (a submodule may be
		// initialized there); a nested repository anywhere else in the
		// work tree is refused by the host's name rule, with corral's line.
		if strings.Contains(out, "WROTE") || !strings.Contains(out, "initialized vendor/lib") || strings.Contains(out, "made nested") ||
			!strings.Contains(out, "corral: this box cannot make a git repository inside the project") {
			t.Errorf("box user:\n%s", out)
		}
		// Guest root takes its own mounts off and tries again.
		root := `cd "$1"
umount -l vendor/lib 2>/dev/null; umount -l sub/.git 2>/dev/null
(echo "gitdir: /tmp" > sub/.git) 2>/dev/null && echo "WROTE sub/.git"
rm -rf vendor/lib/.git; git init -q vendor/lib && git -C vendor/lib config core.fsmonitor "$2" && echo "root initialized vendor/lib"
rmdir vendor/lib 2>/dev/null && echo "REMOVED vendor/lib"
# The parent rename: the private mount moves with vendor; vendor/lib is
# made again in the host's tree, where the host's index has its gitlink.
mv vendor vendor.old && echo "renamed vendor"
mkdir -p vendor/lib && git init -q vendor/lib 2>/dev/null && echo "MADE vendor/lib/.git"
for n in .GIT git~1 .git. ; do mkdir "vendor/lib/$n" 2>/dev/null && echo "MADE $n"; done
ln -s /tmp vendor/lib/.git 2>/dev/null && echo "MADE a .git symlink"
(echo "gitdir: /tmp" > vendor/lib/.git) 2>/dev/null && echo "MADE a gitdir file"
mkdir vendor/lib/x && mv vendor/lib/x vendor/lib/.git 2>/dev/null && echo "MOVED x to .git"
(echo "ref: refs/heads/main" > vendor/lib/HEAD) 2>/dev/null && echo "MADE HEAD"
mv sub/.git sub/moved 2>/dev/null && echo "MOVED sub/.git"
# Put the tree back as it was (the host-side checks below read it).
rm -rf vendor && mv vendor.old vendor && echo "restored vendor"
true`
		out = x.ok("run", "--", "sudo", "sh", "-c", root, "sh", proj, hostile)
		if strings.Contains(out, "WROTE") || strings.Contains(out, "REMOVED") || strings.Contains(out, "MADE") || strings.Contains(out, "MOVED") ||
			!strings.Contains(out, "renamed vendor") || !strings.Contains(out, "restored vendor") {
			t.Errorf("guest root:\n%s", out)
		}
		t.Logf("guest root: %s", strings.TrimSpace(out))
	})
	t.Run("the host's git status, diff and commit run nothing from them", func(t *testing.T) {
		x.t = t
		if ents, err := os.ReadDir(filepath.Join(proj, "vendor", "lib")); err != nil || len(ents) != 0 {
			t.Errorf("host vendor/lib holds %v (%v): the box's repository reached the host", ents, err)
		}
		noGitNamesMadeByTheBox(t, proj, "sub/.git", ".git")
		if b, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl")); !strings.Contains(string(b), `"kind":"git-name-refused"`) {
			t.Error("no git-name-refused event in the audit log")
		}
		if b, _ := os.ReadFile(filepath.Join(proj, "sub", ".git")); string(b) != string(subGit) {
			t.Errorf("host sub/.git changed: %q", b)
		}
		for _, args := range [][]string{{"status"}, {"diff"}, {"status", "--ignore-submodules=none", "-uall"}, {"add", "-A", ":!nested"}, {"commit", "-q", "--allow-empty", "-m", "host commit with submodules"}, {"diff", "HEAD~1"}} {
			if o, err := hostGit(t, proj, args...); err != nil {
				t.Errorf("host git %v: %v %s", args, err, o)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("host git ran a command the box planted")
		}
	})
}

// reviewLastSession, on TestHostFunnel's box (broker mode, the watch on):
// one session reaches an allowed upstream, is denied a host, writes a file
// and makes a nested repository; corral review --json lists each, and its
// Markdown shows the box's hostile file name escaped.
func reviewLastSession(t *testing.T, x *h, proxy, port string) {
	script := `curl -sS --max-time 30 --noproxy '' -x "$1" -o /dev/null "http://127.0.0.1:$2/review"
curl -sS --max-time 30 --noproxy '' -x "$1" -o /dev/null -w '%{http_code}\n' http://review-denied.example.test/
printf 'x\n' > review.txt; printf 'x\n' > "$(printf 'evil\033[31m.txt')"
mkdir -p rv/nested && git init -q rv/nested
sleep 3`
	x.ok("run", "--", "sh", "-c", script, "sh", proxy, port)
	out := x.ok("review", "--json")
	var r struct {
		Schema string
		Egress []struct {
			Host    string
			Allowed bool
		}
		Events []struct {
			Kind string
		}
		Files []struct {
			Path string
		} `json:"files_changed"`
	}
	must(t, json.Unmarshal([]byte(out), &r))
	got := map[string]bool{}
	for _, e := range r.Egress {
		got[e.Host+"/"+strconv.FormatBool(e.Allowed)] = true
	}
	for _, e := range r.Events {
		got["event "+e.Kind] = true
	}
	for _, f := range r.Files {
		got["file "+f.Path] = true
	}
	for _, want := range []string{"127.0.0.1/true", "review-denied.example.test/false", "event nested-git", "file review.txt"} {
		if !got[want] {
			t.Errorf("corral review --json lacks %q:\n%s", want, out)
		}
	}
	if r.Schema != "corral.review/v1" {
		t.Errorf("schema %q", r.Schema)
	}
	if md := x.ok("review"); strings.Contains(md, "\x1b") || !strings.Contains(md, `evil\x1b[31m.txt`) {
		t.Errorf("the Markdown review does not show the box's file name escaped:\n%s", md)
	}
	x.ok("run", "--", "sh", "-c", `rm -rf rv review.txt evil*`)
}
