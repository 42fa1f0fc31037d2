package gitshadow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// snapshot is a tree's state as the guard must leave it: every entry's
// type, permissions, inode and (for regular files) content. It never
// opens anything but a regular file, non-blocking.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		v := fmt.Sprintf("%v ino=%d", fi.Mode(), st.Ino)
		if fi.Mode().IsRegular() {
			f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				h := sha256.New()
				b := make([]byte, 1<<16)
				for {
					n, err := f.Read(b)
					h.Write(b[:n])
					if err != nil {
						break
					}
				}
				f.Close()
				v += " " + hex.EncodeToString(h.Sum(nil))
			}
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			v += " -> " + l
		}
		out[p] = v
		return nil
	})
	return out
}

func sameSnapshot(t testing.TB, what string, a, b map[string]string) {
	t.Helper()
	for p, v := range a {
		if b[p] != v {
			t.Errorf("%s: %s changed: %q -> %q", what, p, v, b[p])
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			t.Errorf("%s: %s appeared", what, p)
		}
	}
}

// deadline runs f and fails the test if it does not return in time (a
// FIFO opened blocking never returns).
func deadline(t testing.TB, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %v (a blocking open?)", d)
	}
}

// hostileHome is a stand-in for what a box-written include may name on
// the host: a home with .ssh/authorized_keys and Documents, a FIFO, a
// device link, and the guard's own state.
type hostileHome struct {
	home, guardDir, fifo string
}

func newHostileHome(t testing.TB) hostileHome {
	t.Helper()
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	h := hostileHome{home: filepath.Join(dir, "home"), guardDir: filepath.Join(dir, "guard"), fifo: filepath.Join(dir, "home", "fifo")}
	for _, d := range []string{".ssh", "Documents/taxes"} {
		_ = os.MkdirAll(filepath.Join(h.home, d), 0o755)
	}
	_ = os.WriteFile(filepath.Join(h.home, ".ssh", "authorized_keys"), []byte("ssh-ed25519 AAAA user\n"), 0o600)
	_ = os.WriteFile(filepath.Join(h.home, "Documents", "taxes", "2025.pdf"), []byte("%PDF"), 0o644)
	if err := syscall.Mkfifo(h.fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Symlink("/dev/zero", filepath.Join(h.home, "zero"))
	return h
}

// targets are include paths a box writes into .git/config.
func (h hostileHome) targets(repo string) []string {
	return []string{
		filepath.Join(h.home, ".ssh", "authorized_keys"),
		"~/.ssh/authorized_keys",
		filepath.Join(h.home, "Documents"),
		filepath.Join(h.guardDir, "fingerprint.json"),
		h.guardDir,
		h.fifo,
		filepath.Join(h.home, "zero"),
		"/dev/zero",
		"/dev/tty",
		"../../home/.ssh/authorized_keys",
		"../a.txt",
		filepath.Join(repo, "a.txt"),
		"hooks/../../../home/fifo",
		"corral-quarantine/x",
	}
}

// TestGuardNeverTouchesWhatAnIncludeNames: for every include a box may
// write, in both modes, the revert puts the recorded config back and
// nothing outside the git directory is opened blocking, moved or written;
// the guard stays armed.
func TestGuardNeverTouchesWhatAnIncludeNames(t *testing.T) {
	repo := newRepo(t)
	h := newHostileHome(t)
	cfg := filepath.Join(repo, ".git", "config")
	for _, mode := range []Mode{Frozen, Commits} {
		for _, target := range h.targets(repo) {
			t.Run(string(mode)+" "+target, func(t *testing.T) {
				g := Guard{Dir: h.guardDir, Mode: mode}
				if err := g.Record(repo, t0); err != nil {
					t.Fatal(err)
				}
				defer g.Disarm()
				orig, _ := os.ReadFile(cfg)
				outside := snapshot(t, filepath.Dir(h.home))
				work := snapshot(t, repo)
				f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
				fmt.Fprintf(f, "[include]\n\tpath = %s\n[includeIf \"gitdir:/\"]\n\tpath = \"%s\"\n", target, target)
				f.Close()
				deadline(t, 5*time.Second, func() { revertAndCheck(t, g, cfg) })
				if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
					t.Errorf("config not restored: %s", b)
				}
				now := snapshot(t, filepath.Dir(h.home))
				sameSnapshot(t, "outside", outside, now)
				for p := range work {
					if strings.HasPrefix(p, filepath.Join(repo, ".git")) {
						delete(work, p)
					}
				}
				after := snapshot(t, repo)
				for p := range after {
					if strings.HasPrefix(p, filepath.Join(repo, ".git")) {
						delete(after, p)
					}
				}
				sameSnapshot(t, "work tree", work, after)
				if !g.Armed() {
					t.Error("the guard was disarmed")
				}
			})
		}
	}
}

// TestGuardFsmonitorInIncludeRunsNothing: real git runs core.fsmonitor
// from a box-written include before the revert and not after it.
func TestGuardFsmonitorInIncludeRunsNothing(t *testing.T) {
	repo := newRepo(t)
	g := armed(t, repo)
	marker := filepath.Join(t.TempDir(), "pwned")
	evil := filepath.Join(repo, "evil.gitconfig") // in the work tree: the box writes it
	_ = os.WriteFile(evil, []byte("[core]\n\tfsmonitor = touch "+marker+"; false\n"), 0o644)
	git(t, repo, "config", "include.path", "../evil.gitconfig")
	git(t, repo, "status", "--short")
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the test's include does not run: %v", err)
	}
	_ = os.Remove(marker)
	revertAndCheck(t, g, filepath.Join(repo, ".git", "config"))
	git(t, repo, "status", "--short")
	if _, err := os.Stat(marker); err == nil {
		t.Error("core.fsmonitor ran after the revert")
	}
	if _, err := os.Stat(evil); err != nil {
		t.Errorf("the included file was touched: %v", err)
	}
}

// TestGuardReplaceRef: a replace ref (loose, then packed) substitutes the
// content of the user's commit before the revert and not after, in both
// modes; in Commits mode the box's own packed branches are kept.
func TestGuardReplaceRef(t *testing.T) {
	for _, mode := range []Mode{Frozen, Commits} {
		for _, packed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s packed=%v", mode, packed), func(t *testing.T) {
				repo := newRepo(t)
				g := Guard{Dir: filepath.Join(t.TempDir(), "guard"), Mode: mode}
				if err := g.Record(repo, t0); err != nil {
					t.Fatal(err)
				}
				head := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
				// The box's substitute: same message, other content.
				blob := strings.TrimSpace(gitIn(t, repo, "evil\n", "hash-object", "-w", "--stdin"))
				tree := strings.TrimSpace(gitIn(t, repo, "100644 blob "+blob+"\ta.txt\n", "mktree"))
				evil := strings.TrimSpace(git(t, repo, "commit-tree", "-m", "a", tree))
				git(t, repo, "replace", head, evil)
				git(t, repo, "branch", "box-work")
				if packed {
					git(t, repo, "pack-refs", "--all")
				}
				if got := git(t, repo, "show", "HEAD:a.txt"); got != "evil\n" {
					t.Fatalf("the replace ref does not substitute: %q", got)
				}
				ch, err := g.Check()
				if err != nil || len(ch) == 0 {
					t.Fatalf("not seen: %v %v", ch, err)
				}
				if err := g.Revert(ch, t0); err != nil {
					t.Fatal(err)
				}
				if ch, err := g.Check(); err != nil || len(ch) != 0 {
					t.Fatalf("after revert: %v %v", ch, err)
				}
				if got := git(t, repo, "show", "HEAD:a.txt"); got != "a\n" {
					t.Errorf("after revert HEAD:a.txt = %q", got)
				}
				_, err = gitErr(repo, "rev-parse", "--verify", "-q", "refs/heads/box-work")
				if keep := mode == Commits; (err == nil) != keep {
					t.Errorf("box branch kept = %v, want %v", err == nil, keep)
				}
			})
		}
	}
}

// TestGuardModes: Frozen reverts the box's commit (refs, HEAD, index);
// Commits keeps it and still reverts config and hooks.
func TestGuardModes(t *testing.T) {
	for _, mode := range []Mode{Frozen, Commits} {
		t.Run(string(mode), func(t *testing.T) {
			repo := newRepo(t)
			g := Guard{Dir: filepath.Join(t.TempDir(), "guard"), Mode: mode}
			if err := g.Record(repo, t0); err != nil {
				t.Fatal(err)
			}
			before := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
			_ = os.WriteFile(filepath.Join(repo, "b.txt"), []byte("b\n"), 0o644)
			git(t, repo, "add", "b.txt")
			git(t, repo, "commit", "-qm", "b")
			git(t, repo, "checkout", "-qb", "other")
			ch, err := g.Check()
			if err != nil {
				t.Fatal(err)
			}
			if mode == Commits {
				if len(ch) != 0 {
					t.Fatalf("a commit is a change in Commits mode: %v", ch)
				}
				git(t, repo, "config", "core.fsmonitor", "touch /tmp/pwned")
				_ = os.WriteFile(filepath.Join(repo, ".git", "objects", "info", "alternates"), []byte("/tmp/evil/objects\n"), 0o644)
				_ = os.MkdirAll(filepath.Join(repo, ".git", "refs", "heads", "x", "hooks"), 0o755)
				_ = os.WriteFile(filepath.Join(repo, ".git", "refs", "heads", "x", "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
				ch, _ = g.Check()
				var got []string
				for _, c := range ch {
					got = append(got, c.String())
				}
				for _, want := range []string{"modified " + filepath.Join(repo, ".git", "config"), "added " + filepath.Join(repo, ".git", "objects", "info", "alternates"),
					"added " + filepath.Join(repo, ".git", "refs", "heads", "x", "hooks", "pre-commit")} {
					if !slices.Contains(got, want) {
						t.Errorf("Commits mode changes %v, want %s", got, want)
					}
				}
			}
			if len(ch) == 0 {
				t.Fatal("no change seen")
			}
			if err := g.Revert(ch, t0); err != nil {
				t.Fatal(err)
			}
			if ch, err := g.Check(); err != nil || len(ch) != 0 {
				t.Fatalf("after revert: %v %v", ch, err)
			}
			head := strings.TrimSpace(git(t, repo, "rev-parse", "HEAD"))
			if (head == before) != (mode == Frozen) {
				t.Errorf("HEAD %s (recorded %s) in %s mode", head, before, mode)
			}
			if mode == Frozen {
				if st := git(t, repo, "status", "--porcelain"); !strings.Contains(st, "b.txt") {
					t.Errorf("the index was not reverted: %q", st)
				}
			}
		})
	}
}

// TestGuardPlantedSymlinks: a symlink the box puts in the git directory
// is moved aside as a link, never followed.
func TestGuardPlantedSymlinks(t *testing.T) {
	repo := newRepo(t)
	h := newHostileHome(t)
	g := armed(t, repo)
	outside := snapshot(t, filepath.Dir(h.home))
	gd := filepath.Join(repo, ".git")
	links := map[string]string{
		"config":              filepath.Join(h.home, ".ssh", "authorized_keys"),
		"hooks/pre-commit":    h.fifo,
		"info/attributes":     "/dev/zero",
		"refs/replace":        filepath.Join(h.home, "Documents"),
		"packed-refs":         h.fifo,
		"corral-quarantine":   filepath.Join(h.home, "Documents"),
		"objects/info/grafts": h.guardDir,
	}
	for rel, target := range links {
		p := filepath.Join(gd, rel)
		_ = os.RemoveAll(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	deadline(t, 5*time.Second, func() { revertAndCheck(t, g, filepath.Join(gd, "config")) })
	sameSnapshot(t, "outside", outside, snapshot(t, filepath.Dir(h.home)))
	if fi, err := os.Lstat(filepath.Join(gd, "config")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("config not restored: %v", err)
	}
}

// TestGuardSwappedGitDir: a .git replaced by a symlink to another
// directory is not the recorded one: nothing there is touched.
func TestGuardSwappedGitDir(t *testing.T) {
	repo := newRepo(t)
	h := newHostileHome(t)
	g := armed(t, repo)
	gd := filepath.Join(repo, ".git")
	_ = os.Rename(gd, gd+".moved")
	_ = os.Symlink(h.home, gd)
	outside := snapshot(t, filepath.Dir(h.home))
	if _, err := g.Check(); err == nil {
		t.Error("a swapped git directory was checked")
	}
	_ = g.Revert([]Change{{Path: filepath.Join(gd, "config"), Kind: Modified}, {Path: filepath.Join(gd, ".ssh"), Kind: Added}}, t0)
	sameSnapshot(t, "outside", outside, snapshot(t, filepath.Dir(h.home)))
}

// TestGuardLegacyFingerprint: a fingerprint.json from before version 2
// (absolute files, included files anywhere, dirs) still checks and
// reverts the git directory, and what it recorded outside is forgotten,
// never touched.
func TestGuardLegacyFingerprint(t *testing.T) {
	repo := newRepo(t)
	h := newHostileHome(t)
	g := Guard{Dir: h.guardDir}
	gd := filepath.Join(repo, ".git")
	cfg := filepath.Join(gd, "config")
	orig, _ := os.ReadFile(cfg)
	sum := sha256.Sum256(orig)
	hexSum := hex.EncodeToString(sum[:])
	_ = os.MkdirAll(filepath.Join(h.guardDir, "blobs"), 0o700)
	_ = os.WriteFile(filepath.Join(h.guardDir, "blobs", hexSum), orig, 0o600)
	keys := filepath.Join(h.home, ".ssh", "authorized_keys")
	files := map[string]any{
		cfg:                                  map[string]any{"mode": 0o644, "sha256": hexSum},
		filepath.Join(gd, "config.worktree"): map[string]any{"absent": true},
		keys:                                 map[string]any{"mode": 0o600, "sha256": "00"},
		h.fifo:                               map[string]any{"mode": 0o644, "sha256": "00"},
	}
	for _, d := range []string{"hooks", "info"} {
		fi, _ := os.Lstat(filepath.Join(gd, d))
		files[filepath.Join(gd, d)] = map[string]any{"mode": fi.Mode()}
		ents, _ := os.ReadDir(filepath.Join(gd, d))
		for _, e := range ents {
			p := filepath.Join(gd, d, e.Name())
			b, _ := os.ReadFile(p)
			fi, _ := os.Lstat(p)
			s := sha256.Sum256(b)
			_ = os.WriteFile(filepath.Join(h.guardDir, "blobs", hex.EncodeToString(s[:])), b, 0o600)
			files[p] = map[string]any{"mode": fi.Mode(), "sha256": hex.EncodeToString(s[:])}
		}
	}
	old := map[string]any{
		"project":  repo,
		"recorded": t0,
		"files":    files,
		"dirs":     []string{filepath.Join(gd, "hooks"), filepath.Join(gd, "info")},
	}
	b, _ := json.Marshal(old)
	_ = os.WriteFile(filepath.Join(h.guardDir, "fingerprint.json"), b, 0o600)
	outside := snapshot(t, h.home)
	git(t, repo, "config", "core.fsmonitor", "touch /tmp/pwned")
	_ = os.WriteFile(filepath.Join(gd, "hooks", "pre-commit"), []byte("#!/bin/sh\n"), 0o755)
	var ch []Change
	deadline(t, 5*time.Second, func() {
		var err error
		if ch, err = g.Check(); err != nil {
			t.Error(err)
		}
	})
	if len(ch) != 2 {
		t.Fatalf("changes %v, want config and the hook", ch)
	}
	if err := g.Revert(ch, t0); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
		t.Errorf("config = %s", b)
	}
	if ch, err := g.Check(); err != nil || len(ch) != 0 {
		t.Errorf("after revert: %v %v", ch, err)
	}
	sameSnapshot(t, "outside", outside, snapshot(t, h.home))
}

// minimalGitDir lays out a git directory by hand (the guard runs no git).
func minimalGitDir(t testing.TB, repo string) {
	t.Helper()
	gd := filepath.Join(repo, ".git")
	for _, d := range []string{"hooks", "info", "objects/info", "objects/pack", "refs/heads", "refs/tags", "logs/refs/heads"} {
		_ = os.MkdirAll(filepath.Join(gd, d), 0o755)
	}
	for name, s := range map[string]string{
		"HEAD":               "ref: refs/heads/main\n",
		"config":             "[core]\n\trepositoryformatversion = 0\n[include]\n\tpath = team.gitconfig\n",
		"team.gitconfig":     "[user]\n\tname = u\n",
		"refs/heads/main":    strings.Repeat("a", 40) + "\n",
		"packed-refs":        "# pack-refs with: peeled fully-peeled sorted \n" + strings.Repeat("b", 40) + " refs/tags/v1\n",
		"index":              "DIRC\x00\x00\x00\x02\x00\x00\x00\x00",
		"info/exclude":       "",
		"hooks/pre-commit":   "#!/bin/sh\n",
		"logs/HEAD":          "",
		"description":        "d\n",
		"objects/info/packs": "\n",
	} {
		_ = os.WriteFile(filepath.Join(gd, name), []byte(s), 0o644)
	}
}

// hostileOps applies a box's writes, chosen by ops, to the git directory
// of repo: configs with includes anywhere, symlinks, FIFOs, directories
// and large files at watched and unwatched names.
func hostileOps(t testing.TB, repo string, h hostileHome, ops []byte, text []byte) {
	gd := filepath.Join(repo, ".git")
	names := []string{"config", "hooks/pre-commit", "hooks/post-checkout", "info/exclude", "info/grafts",
		"refs/heads/main", "refs/replace/" + strings.Repeat("a", 40), "packed-refs", "HEAD", "index",
		"objects/info/alternates", "shallow", "team.gitconfig", "commondir", "config.worktree",
		"modules/m/config", "worktrees/w/gitdir", "refs/heads/x/config", "corral-quarantine", "hooks", "info",
		"logs/HEAD", "objects/ab/config", "sub.lock", "a/b/c/d"}
	targets := h.targets(repo)
	for i := 0; i+2 < len(ops); i += 3 {
		rel := names[int(ops[i+1])%len(names)]
		target := targets[int(ops[i+2])%len(targets)]
		// The box writes inside the project only: its writes never
		// follow a link (one it planted points elsewhere in the guest).
		if !boxWritable(gd, rel) {
			continue
		}
		p := filepath.Join(gd, rel)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() && ops[i]%8 != 2 {
			_ = os.RemoveAll(p)
		}
		switch ops[i] % 8 {
		case 0:
			_ = os.RemoveAll(p)
			_ = os.Symlink(target, p)
		case 1:
			_ = os.RemoveAll(p)
			_ = syscall.Mkfifo(p, 0o644)
		case 2:
			_ = os.RemoveAll(p)
			_ = os.MkdirAll(filepath.Join(p, "x"), 0o755)
		case 3:
			_ = os.WriteFile(p, fmt.Appendf(nil, "[include]\n\tpath = %s\n[core]\n\tfsmonitor = touch /tmp/pwned\n", target), 0o644)
		case 4:
			_ = os.WriteFile(p, text, 0o755)
		case 5:
			_ = os.RemoveAll(p)
		case 6:
			f, err := os.Create(p)
			if err == nil {
				_ = f.Truncate(MaxWatchedSize + 1)
				f.Close()
			}
		case 7:
			// A deep include chain inside the git directory.
			prev := "config"
			for j := 0; j < 12; j++ {
				next := fmt.Sprintf("inc%d", j)
				_ = os.RemoveAll(filepath.Join(gd, prev))
				_ = os.WriteFile(filepath.Join(gd, prev), fmt.Appendf(nil, "[include]\n\tpath = %s\n", next), 0o644)
				prev = next
			}
			_ = os.RemoveAll(filepath.Join(gd, prev))
			_ = os.WriteFile(filepath.Join(gd, prev), fmt.Appendf(nil, "[include]\n\tpath = %s\n", target), 0o644)
		}
	}
}

// boxWritable reports whether no parent of rel under gd is a symlink or
// a non-directory.
func boxWritable(gd, rel string) bool {
	for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
		fi, err := os.Lstat(filepath.Join(gd, d))
		if err == nil && !fi.IsDir() {
			return false
		}
	}
	return true
}

// guardInvariants records a hand-made repository, applies ops, reverts,
// and checks the guard's invariants: within a deadline, nothing outside
// the git directory changed (the guard's state included), and the watched
// set is back, byte for byte.
func guardInvariants(t testing.TB, mode Mode, ops, text []byte) {
	h := newHostileHome(t)
	dir, _ := filepath.EvalSymlinks(t.TempDir())
	repo := filepath.Join(dir, "repo")
	_ = os.MkdirAll(repo, 0o755)
	_ = os.WriteFile(filepath.Join(repo, "a.txt"), []byte("a\n"), 0o644)
	minimalGitDir(t, repo)
	g := Guard{Dir: h.guardDir, Mode: mode}
	if err := g.Record(repo, t0); err != nil {
		t.Fatal(err)
	}
	recorded, err := g.Load()
	if err != nil {
		t.Fatal(err)
	}
	hostileOps(t, repo, h, ops, text)
	outside := snapshot(t, filepath.Dir(h.home))
	work := snapshot(t, filepath.Join(repo, "a.txt"))
	deadline(t, 10*time.Second, func() {
		ch, err := g.Check()
		if rerr := g.Revert(ch, t0); rerr != nil && err == nil {
			// A recorded FIFO or a vanished directory can't always be
			// recreated; nothing else may fail.
			t.Logf("revert: %v", rerr)
		}
		ch, err = g.Check()
		if err != nil || len(ch) != 0 {
			t.Errorf("after revert: %v %v", ch, err)
		}
		now, _, err := g.scan(recorded, nil)
		if err != nil {
			t.Error(err)
		}
		for p, e := range recorded.Files {
			if now[p] != e && !commitsPackedRefs(mode, p) {
				t.Errorf("%s = %+v, recorded %+v", p, now[p], e)
			}
		}
	})
	sameSnapshot(t, "outside", outside, snapshot(t, filepath.Dir(h.home)))
	sameSnapshot(t, "work tree", work, snapshot(t, filepath.Join(repo, "a.txt")))
}

// TestGuardProperty: random sequences of hostile writes, both modes.
func TestGuardProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 40
	if testing.Short() {
		n = 8
	}
	for i := range n {
		ops := make([]byte, 3*(1+r.IntN(8)))
		for j := range ops {
			ops[j] = byte(r.IntN(256))
		}
		mode := []Mode{Frozen, Commits}[i%2]
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) { guardInvariants(t, mode, ops, []byte("[core]\n\tpager = evil\n")) })
	}
}

// FuzzGuard: any box-written git directory content (a config of any
// bytes, links, FIFOs, directories, huge files, includes anywhere) is
// reverted without touching anything outside, and never hangs.
func FuzzGuard(f *testing.F) {
	f.Add(false, []byte{0, 0, 0}, []byte("[include]\n\tpath = ~/.ssh/authorized_keys\n"))
	f.Add(true, []byte{3, 0, 5, 1, 1, 0, 7, 0, 3}, []byte("[includeIf \"gitdir:/\"]\npath=/dev/zero"))
	f.Add(true, []byte{2, 18, 4, 6, 3, 1}, []byte("\x00\xff[include\n"))
	f.Fuzz(func(t *testing.T, commits bool, ops, text []byte) {
		if len(ops) > 60 || len(text) > 1<<16 {
			return
		}
		mode := Frozen
		if commits {
			mode = Commits
		}
		guardInvariants(t, mode, ops, text)
	})
}

// gitIn runs git with stdin.
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func gitErr(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
