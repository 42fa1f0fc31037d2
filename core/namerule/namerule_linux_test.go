//go:build linux && (amd64 || arm64)

package namerule

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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/dotgit"
	"github.com/corral-dev/corral/core/qemu"
)

func TestMain(m *testing.M) {
	if code, ok := harnessMain(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

func needChain(t testing.TB) {
	t.Helper()
	if err := qemu.CheckNamespaces(); err != nil {
		t.Skipf("no user namespaces here: %v", err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
}

// runChain runs the real chain (unshare, the stage, the supervisor, the
// filter, exec) with the actor in qemu's place, under root.
func runChain(t testing.TB, root string, env ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), append([]string{modeEnv + "=first", rootEnv + "=" + root}, env...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("chain: %v\n%s", err, out)
	}
	return string(out)
}

func mustRun(t testing.TB, dir string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = hostGitEnv(filepath.Dir(dir), t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// hostGitEnv is what host git runs with in these tests: no system or user
// config of the machine's, nothing found above ceiling.
func hostGitEnv(ceiling, home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CEILING_DIRECTORIES="+ceiling,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
}

// fixture is a project of one of the three shapes the rule must hold for.
type fixture struct {
	base, root string
}

func newFixture(t testing.TB, kind int) fixture {
	t.Helper()
	base := t.TempDir()
	var root string
	switch kind % 3 {
	case 0: // the top of a repository, with a nested repository and a vendor/ tree
		root = filepath.Join(base, "proj")
		must(t, os.MkdirAll(filepath.Join(root, "vendor", "lib"), 0o755))
		mustRun(t, base, "git", "init", "-q", "-b", "main", root)
		must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644))
		mustRun(t, root, "git", "add", "a.txt")
		mustRun(t, root, "git", "commit", "-q", "-m", "a")
		mustRun(t, root, "git", "init", "-q", "-b", "main", filepath.Join(root, "vendor", "nested"))
	case 1: // a monorepo's subdirectory
		outer := filepath.Join(base, "mono")
		root = filepath.Join(outer, "svc")
		must(t, os.MkdirAll(filepath.Join(root, "vendor", "lib"), 0o755))
		mustRun(t, base, "git", "init", "-q", "-b", "main", outer)
		must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644))
		mustRun(t, outer, "git", "add", "svc/a.txt")
		mustRun(t, outer, "git", "commit", "-q", "-m", "a")
	default: // no git at all
		root = filepath.Join(base, "plain")
		must(t, os.MkdirAll(filepath.Join(root, "vendor", "lib"), 0o755))
		must(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("a\n"), 0o644))
	}
	return fixture{base: base, root: root}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// gitEntry is an entry host git would take for a repository's: a .git
// name or a HEAD, with a digest of everything under it.
type gitEntry struct {
	name, digest string
}

// gitEntries maps the inode of every such entry under base to it.
func gitEntries(t testing.TB, base string) map[uint64]gitEntry {
	t.Helper()
	out := map[uint64]gitEntry{}
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == base {
			return nil
		}
		if dotgit.Is(d.Name()) || d.Name() == BareHead {
			fi, err := os.Lstat(p)
			if err == nil {
				out[fi.Sys().(*syscall.Stat_t).Ino] = gitEntry{name: d.Name(), digest: digest(p)}
			}
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	return out
}

// digest covers names, types, modes, link targets and contents.
func digest(p string) string {
	h := sha256.New()
	filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(h, "err %s\n", q)
			return nil
		}
		fi, _ := os.Lstat(q)
		rel, _ := filepath.Rel(p, q)
		fmt.Fprintf(h, "%s %v\n", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(q)
			fmt.Fprintf(h, "-> %s\n", l)
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(q)
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// hostGitRunsNothing runs host git status in every directory under base
// (inside git directories too): no fsmonitor, hook or other command the
// attacker planted may run.
func hostGitRunsNothing(t testing.TB, base, marker string) {
	t.Helper()
	home := t.TempDir()
	env := hostGitEnv(filepath.Dir(base), home)
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		cmd := exec.Command("git", "status", "--porcelain")
		cmd.Dir, cmd.Env = p, env
		cmd.Run()
		return nil
	})
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("host git ran a command the box planted: %q", b)
	}
}

// checkInvariants: every .git or HEAD entry under base is one that was
// there before, with its name and everything under it unchanged, and host
// git runs nothing.
func checkInvariants(t testing.TB, f fixture, before map[uint64]gitEntry, marker, log string) {
	t.Helper()
	after := gitEntries(t, f.base)
	for ino, e := range after {
		b, ok := before[ino]
		switch {
		case !ok:
			t.Fatalf("the box made %q (inode %d)\nmoves:\n%s", e.name, ino, log)
		case b.name != e.name:
			t.Fatalf("the box renamed %q to %q\nmoves:\n%s", b.name, e.name, log)
		case b.digest != e.digest:
			t.Fatalf("the box changed what is under %q\nmoves:\n%s", e.name, log)
		}
	}
	for ino, b := range before {
		if _, ok := after[ino]; !ok {
			t.Fatalf("the box removed or moved away %q\nmoves:\n%s", b.name, log)
		}
	}
	hostGitRunsNothing(t, f.base, marker)
}

// TestAttacks: each move an attacker would try, through the real chain,
// and what the rule answers; then the host invariants.
func TestAttacks(t *testing.T) {
	needChain(t)
	for kind, shape := range []string{"repository top", "monorepo subdirectory", "no git"} {
		t.Run(shape, func(t *testing.T) {
			f := newFixture(t, kind)
			marker := filepath.Join(t.TempDir(), "marker")
			before := gitEntries(t, f.base)
			cfg := "[core]\n\tfsmonitor = echo ran >> " + marker + "\n"
			ops := []op{
				{Do: "mkdir", Dir: ".", Name: "work"},                           // ok
				{Do: "create", Dir: "work", Name: "f.txt", Body: "x"},           // ok
				{Do: "mkdir", Dir: ".", Name: ".git"},                           // EPERM
				{Do: "mkdir", Dir: "work", Name: ".GIT"},                        // EPERM
				{Do: "mkdir", Dir: "work", Name: "git~1"},                       // EPERM
				{Do: "mkdir", Dir: "work", Name: ".git."},                       // EPERM
				{Do: "mkdir", Dir: "work", Name: ".g\u200cit"},                  // EPERM
				{Do: "create", Dir: "work", Name: ".git", Body: "gitdir: /tmp"}, // EPERM
				{Do: "symlink", Dir: "work", Name: ".git", To: "/tmp"},          // EPERM
				{Do: "link", Dir: "work", Name: "f.txt", Dir2: "work", To: ".git"},
				{Do: "mkdir", Dir: "work", Name: "x"},
				{Do: "rename", Dir: "work", Name: "x", Dir2: "work", To: ".git"},
				{Do: "mknod", Dir: "work", Name: ".git"},
				{Do: "tmpfile", Dir: "work", Name: ".git", Body: "gitdir: /tmp"},
				{Do: "create", Dir: "work", Name: "HEAD", Body: "ref: refs/heads/main\n"},
				// The parent rename: vendor moves, vendor/lib is made again.
				{Do: "rename", Dir: ".", Name: "vendor", Dir2: ".", To: "vendor.old"},
				{Do: "mkdir", Dir: ".", Name: "vendor"},
				{Do: "mkdir", Dir: "vendor", Name: "lib"},
				{Do: "mkdir", Dir: "vendor/lib", Name: ".git"},
				// Inside a repository that was there before.
				{Do: "create", Dir: ".git", Name: "config", Body: cfg},
				{Do: "write", Dir: ".git", Name: "config", Body: cfg},
				{Do: "chmod", Dir: ".git", Name: "config"},
				{Do: "chown", Dir: ".git", Name: "config"},
				{Do: "setxattr", Dir: ".git", Name: "config"},
				{Do: "mkdir", Dir: ".git/hooks", Name: "x"},
				{Do: "rename", Dir: ".", Name: ".git", Dir2: ".", To: "moved"},
				{Do: "unlink", Dir: ".git", Name: "HEAD"},
				{Do: "link", Dir: ".git", Name: "config", Dir2: ".", To: "cfg"},
				{Do: "write", Dir: "vendor.old/nested/.git", Name: "config", Body: cfg},
				{Do: "exchange", Dir: "vendor.old", Name: "nested", Dir2: "work", To: "f.txt"},
				// Never qemu's: several components, absolute, following a link.
				{Do: "mkdirpath", To: "work/y/.git"},
				{Do: "mkdirpath", To: "work/y"},
				{Do: "mkdirabs", To: filepath.Join(f.root, "work", "z")},
				{Do: "symlink", Dir: "work", Name: "lnk", To: "../.git/config"},
				{Do: "createfollow", Dir: "work", Name: "lnk"},
				{Do: "createabs", To: filepath.Join(t.TempDir(), "outside")},
			}
			b, _ := json.Marshal(ops)
			out := runChain(t, f.root, opsEnv+"="+string(b), "CORRAL_NAMERULE_MARKER="+marker)
			want := map[string]string{
				"mkdir ./work": "ok", "create work/f.txt": "ok", "mkdir work/x": "ok",
				"rename ./vendor": "ok", "mkdir ./vendor": "ok", "mkdir vendor/lib": "ok",
				"symlink work/lnk": "ok", "createabs /": "ok",
				// A repository moves whole, with what is in it: allowed.
				// (Only the repository fixture has one.)
				"exchange vendor.old/nested": map[bool]string{true: "ok", false: "ENOENT"}[kind == 0],
			}
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if strings.HasPrefix(line, "corral qemu:") {
					continue
				}
				k, got, ok := strings.Cut(line, ": ")
				if !ok {
					t.Errorf("odd line %q", line)
					continue
				}
				w := want[k]
				if w == "" {
					w = "EPERM"
				}
				// Moves into a repository the fixture does not have fail
				// before the rule is asked (ENOENT); the rule must still
				// never let one through.
				if got != w && !(w == "EPERM" && (got == "ENOENT" || got == "ENOTDIR")) {
					t.Errorf("%s: %s, want %s", k, got, w)
				}
			}
			if !strings.Contains(out, "refused mkdirat: a .git name in the work tree") {
				t.Errorf("the supervisor reported no refusal:\n%s", out)
			}
			checkInvariants(t, f, before, marker, out)
		})
	}
}

// TestPropertyNoRepository plays the attacker: random sequences of the
// moves a box can make through qemu's 9p server (mkdir, create, write,
// rename and exchange of any entry, ancestors included, link, symlink,
// unlink, rmdir, chmod, O_TMPFILE, several-component and link-following
// calls), with every spelling of .git and HEAD among the names and
// gitdir:, config and hook contents; after each sequence the host
// invariants hold.
func TestPropertyNoRepository(t *testing.T) {
	needChain(t)
	seqs, moves := 24, 60
	if testing.Short() {
		seqs = 6
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 34))
	var ok, refused int
	defer func() {
		t.Logf("%d sequences of %d moves: %d carried out, %d refused by the rule", seqs, moves, ok, refused)
		// The attacker must be doing something: a harness whose moves all
		// fail proves nothing.
		if !t.Failed() && (ok < seqs*moves/10 || refused < seqs) {
			t.Errorf("the attacker's moves went nowhere: %d carried out, %d refused", ok, refused)
		}
	}()
	for i := range seqs {
		f := newFixture(t, i)
		marker := filepath.Join(t.TempDir(), "marker")
		before := gitEntries(t, f.base)
		b := make([]byte, 512)
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		out := runChain(t, f.root, seedEnv+"="+hex.EncodeToString(b), fmt.Sprintf("%s=%d", countEnv, moves), "CORRAL_NAMERULE_MARKER="+marker)
		var o, e, x int
		if i := strings.Index(out, "moves: "); i >= 0 {
			fmt.Sscanf(out[i:], "moves: ok %d EPERM %d other %d", &o, &e, &x)
		}
		ok, refused = ok+o, refused+e
		checkInvariants(t, f, before, marker, "seed bytes "+hex.EncodeToString(b)+"\n"+out)
	}
}

// FuzzNameRule runs the same harness on the fuzzer's bytes.
func FuzzNameRule(f *testing.F) {
	if err := qemu.CheckNamespaces(); err != nil {
		f.Skipf("no user namespaces here: %v", err)
	}
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, uint8(0))
	f.Add([]byte(".git\x00vendor\x05\x06HEAD"), uint8(1))
	f.Fuzz(func(t *testing.T, b []byte, kind uint8) {
		if len(b) == 0 {
			return
		}
		fx := newFixture(t, int(kind))
		marker := filepath.Join(t.TempDir(), "marker")
		before := gitEntries(t, fx.base)
		out := runChain(t, fx.root, seedEnv+"="+hex.EncodeToString(b), fmt.Sprintf("%s=%d", countEnv, 40), "CORRAL_NAMERULE_MARKER="+marker)
		checkInvariants(t, fx, before, marker, out)
	})
}

// BenchmarkUnpack: 10,000 files made as qemu's 9p server makes them for
// an unpack in the box (per file: create, write, chown, chmod: three
// trapped calls), through the real chain, with the rule and without it;
// reports the time per file and per trapped call of the rule's share.
// go test -run '^$' -bench Unpack -benchtime 5x ./core/namerule
func BenchmarkUnpack(b *testing.B) {
	needChain(b)
	const files = 10000
	run := func(b *testing.B, env ...string) float64 {
		var total float64
		for range b.N {
			root := filepath.Join(b.TempDir(), "proj")
			must(b, os.Mkdir(root, 0o755))
			out := runChain(b, root, append(env, fmt.Sprintf("%s=%d", benchEnv, files))...)
			var ns float64
			if i := strings.Index(out, "bench-ns "); i < 0 {
				b.Fatalf("no timing:\n%s", out)
			} else {
				fmt.Sscanf(out[i:], "bench-ns %f", &ns)
			}
			total += ns
		}
		return total / float64(b.N)
	}
	var with, without float64
	b.Run("without", func(b *testing.B) {
		without = run(b, noFilterEnv+"=1")
		b.ReportMetric(without/files, "ns/file")
	})
	b.Run("with", func(b *testing.B) {
		with = run(b)
		b.ReportMetric(with/files, "ns/file")
		b.ReportMetric((with-without)/files/3, "ns/trapped-call")
	})
	fmt.Printf("\n| 10,000 files as 9p makes them (create, write, chown, chmod) | total | per file |\n| --- | ---: | ---: |\n")
	fmt.Printf("| without the name rule | %.1f ms | %.1f µs |\n| with the name rule | %.1f ms | %.1f µs |\n", without/1e6, without/files/1e3, with/1e6, with/files/1e3)
	fmt.Printf("| the rule's cost per trapped call (3 per file) | | %.1f µs |\n\n", (with-without)/files/3/1e3)
}
