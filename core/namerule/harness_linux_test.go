//go:build linux && (amd64 || arm64)

package namerule

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/qemu"
	"golang.org/x/sys/unix"
)

// The test binary plays every part of the real chain: the qemu wrapper's
// first run (modeEnv=first: unshare, as qemu.EnterNamespace does for
// Lima's qemu), its stage (the supervisor started, the filter installed,
// exec without capabilities), the supervisor (argv[1] == Command), and in
// place of qemu the actor: a process under the filter that makes the calls
// qemu's 9p server makes for a guest (a directory walked one component at a
// time with O_PATH|O_NOFOLLOW, then *at calls on one name), chosen by the
// attacker.
const (
	modeEnv  = "CORRAL_NAMERULE_TEST"
	rootEnv  = "CORRAL_NAMERULE_ROOT"
	opsEnv   = "CORRAL_NAMERULE_OPS"   // JSON []op for a scripted run
	seedEnv  = "CORRAL_NAMERULE_SEED"  // hex bytes for a random run
	countEnv = "CORRAL_NAMERULE_COUNT" // number of random moves
	// benchEnv: the actor makes that many files as qemu's 9p server
	// does for an unpack, and prints the time; noFilterEnv runs the same
	// chain without the rule, for the comparison.
	benchEnv    = "CORRAL_NAMERULE_BENCH"
	noFilterEnv = "CORRAL_NAMERULE_NOFILTER"
)

func harnessMain() (int, bool) {
	if len(os.Args) > 1 && os.Args[1] == Command {
		return Main(os.Args[2:], os.Stderr, nil), true
	}
	switch os.Getenv(modeEnv) {
	case "first":
		if _, staged := os.LookupEnv(qemu.StageEnv); !staged {
			err := qemu.EnterNamespace(os.Args, os.Environ())
			fmt.Fprintln(os.Stderr, "enter:", err)
			return 3, true
		}
		if staged, err := qemu.InStage(); err != nil || !staged {
			fmt.Fprintln(os.Stderr, "not staged:", staged, err)
			return 4, true
		}
		root := os.Getenv(rootEnv)
		if os.Getenv(noFilterEnv) == "" {
			if err := Start(os.Args[0], Rule{Box: "test", Roots: []string{root}}, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, "start:", err)
				return 5, true
			}
		}
		var env []string
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, modeEnv+"=") {
				env = append(env, kv)
			}
		}
		env = append(env, modeEnv+"=actor")
		err := qemu.ExecWithoutCaps(os.Args[0], []string{os.Args[0]}, env)
		fmt.Fprintln(os.Stderr, "exec:", err)
		return 6, true
	case "actor":
		return act(), true
	}
	return 0, false
}

// op is one scripted call of the actor.
type op struct {
	Do   string `json:"do"`
	Dir  string `json:"dir,omitempty"`  // relative to the root, walked
	Name string `json:"name,omitempty"` // one component
	Dir2 string `json:"dir2,omitempty"`
	To   string `json:"to,omitempty"` // second name, symlink target or a path
	Body string `json:"body,omitempty"`
}

func act() int {
	root := os.Getenv(rootEnv)
	rfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		fmt.Println("open root:", err)
		return 1
	}
	a := &actor{root: root, rfd: rfd}
	if n := os.Getenv(benchEnv); n != "" {
		return a.bench(n)
	}
	if s := os.Getenv(opsEnv); s != "" {
		var ops []op
		if err := json.Unmarshal([]byte(s), &ops); err != nil {
			fmt.Println("ops:", err)
			return 1
		}
		for _, o := range ops {
			fmt.Printf("%s %s/%s: %s\n", o.Do, o.Dir, o.Name, errName(a.do(o)))
		}
		return 0
	}
	seed, err := hex.DecodeString(os.Getenv(seedEnv))
	if err != nil || len(seed) == 0 {
		fmt.Println("seed:", err)
		return 1
	}
	var n int
	fmt.Sscan(os.Getenv(countEnv), &n)
	src := &byteSource{b: seed}
	counts := map[string]int{}
	for i := 0; i < n; i++ {
		o := a.random(src)
		counts[errName(a.do(o))]++
	}
	fmt.Printf("moves: ok %d EPERM %d other %d\n", counts["ok"], counts["EPERM"], n-counts["ok"]-counts["EPERM"])
	return 0
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

type actor struct {
	root string
	rfd  int
}

// walk opens dir (relative to the root) one component at a time without
// following a link, as qemu's 9p server does.
func (a *actor) walk(dir string) (int, error) {
	fd, err := unix.Dup(a.rfd)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(dir, "/") {
		if c == "" || c == "." {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

func (a *actor) do(o op) error {
	switch o.Do {
	case "mkdirpath": // several components from the root: never qemu's
		return unix.Mkdirat(a.rfd, o.To, 0o755)
	case "mkdirabs":
		return unix.Mkdir(o.To, 0o755)
	case "createabs":
		fd, err := unix.Open(o.To, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	d, err := a.walk(o.Dir)
	if err != nil {
		return err
	}
	defer unix.Close(d)
	switch o.Do {
	case "mkdir":
		return unix.Mkdirat(d, o.Name, 0o755)
	case "create", "write":
		flags := unix.O_WRONLY | unix.O_TRUNC | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if o.Do == "create" {
			flags |= unix.O_CREAT
		}
		fd, err := unix.Openat(d, o.Name, flags, 0o755)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte(o.Body))
		return err
	case "createfollow": // O_CREAT without O_NOFOLLOW: never qemu's
		fd, err := unix.Openat(d, o.Name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "rename", "exchange", "link":
		d2, err := a.walk(o.Dir2)
		if err != nil {
			return err
		}
		defer unix.Close(d2)
		switch o.Do {
		case "rename":
			return unix.Renameat(d, o.Name, d2, o.To)
		case "exchange":
			return unix.Renameat2(d, o.Name, d2, o.To, unix.RENAME_EXCHANGE)
		}
		return unix.Linkat(d, o.Name, d2, o.To, 0)
	case "symlink":
		return unix.Symlinkat(o.To, d, o.Name)
	case "mknod":
		return unix.Mknodat(d, o.Name, unix.S_IFIFO|0o644, 0)
	case "unlink":
		return unix.Unlinkat(d, o.Name, 0)
	case "rmdir":
		return unix.Unlinkat(d, o.Name, unix.AT_REMOVEDIR)
	case "chmod": // as qemu does: an O_PATH descriptor, then its /proc link
		fd, err := unix.Openat(d, o.Name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), 0o755, 0)
	case "chown":
		return unix.Fchownat(d, o.Name, os.Getuid(), os.Getgid(), unix.AT_SYMLINK_NOFOLLOW)
	case "setxattr": // as qemu does: the /proc link of the directory, then the name
		return unix.Lsetxattr(fmt.Sprintf("/proc/self/fd/%d/%s", d, o.Name), "user.corral", []byte("x"), 0)
	case "tmpfile": // an unnamed file linked in under a name
		fd, err := unix.Openat(d, ".", unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		unix.Write(fd, []byte(o.Body))
		return unix.Linkat(fd, "", d, o.Name, unix.AT_EMPTY_PATH)
	}
	return fmt.Errorf("unknown op %q", o.Do)
}

// byteSource turns attacker bytes into choices (the fuzz input, or a
// seeded random run), cycling when they run out.
type byteSource struct {
	b []byte
	i int
}

func (s *byteSource) n(k int) int {
	if k <= 1 {
		return 0
	}
	v := int(s.b[s.i%len(s.b)])<<8 | int(s.b[(s.i+1)%len(s.b)])
	s.i += 2
	return v % k
}

// attackNames are the names the attacker uses: every spelling of .git a
// file system or git takes for it, HEAD, and ordinary ones.
var attackNames = []string{
	".git", ".GIT", ".Git", "git~1", "GIT~1", ".git.", ".git ", ".git...", ".g\u200cit", ".git\ufeff", ".\u200dgit",
	"HEAD", "a", "b", "vendor", "lib", "x", "hooks", "config", "objects", "refs", "post-index-change", "fsmonitor-watchman",
}

// body is what the attacker writes into a file of that name: a config
// that runs the marker, a hook that does, a HEAD, a gitdir: pointer.
func (a *actor) body(name string) string {
	marker := os.Getenv("CORRAL_NAMERULE_MARKER")
	switch {
	case name == "config":
		return "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = echo ran >> " + marker + "\n"
	case name == "HEAD":
		return "ref: refs/heads/main\n"
	case strings.HasPrefix(name, "post-") || strings.HasPrefix(name, "fsmonitor"):
		return "#!/bin/sh\necho ran >> " + marker + "\n"
	case name != "a" && name != "b" && name != "x" && name != "vendor" && name != "lib":
		return "gitdir: " + filepath.Join(a.root, "a") + "\n"
	}
	return "data\n"
}

// dirs lists the directories under the root (depth 5), relative, sorted:
// the attacker picks among them, .git ones included.
func (a *actor) dirs() []string {
	out := []string{"."}
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		if depth > 5 {
			return
		}
		ents, err := os.ReadDir(filepath.Join(a.root, rel))
		if err != nil {
			return
		}
		for _, e := range ents {
			if e.Type().IsDir() {
				r := filepath.Join(rel, e.Name())
				out = append(out, r)
				walk(r, depth+1)
			}
		}
	}
	walk(".", 0)
	sort.Strings(out)
	return out
}

func (a *actor) entries(dir string) []string {
	ents, _ := os.ReadDir(filepath.Join(a.root, dir))
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// random picks the next move from what the tree holds now.
func (a *actor) random(src *byteSource) op {
	dirs := a.dirs()
	d := dirs[src.n(len(dirs))]
	name := attackNames[src.n(len(attackNames))]
	pickEntry := func(dir string) string {
		if e := a.entries(dir); len(e) > 0 {
			return e[src.n(len(e))]
		}
		return name
	}
	switch src.n(16) {
	case 0, 1:
		return op{Do: "mkdir", Dir: d, Name: name}
	case 2, 3:
		return op{Do: "create", Dir: d, Name: name, Body: a.body(name)}
	case 4:
		return op{Do: "write", Dir: d, Name: pickEntry(d), Body: a.body(pickEntry(d))}
	case 5, 6: // any entry, ancestors of everything included
		d2 := dirs[src.n(len(dirs))]
		return op{Do: "rename", Dir: d, Name: pickEntry(d), Dir2: d2, To: name}
	case 7:
		d2 := dirs[src.n(len(dirs))]
		return op{Do: "exchange", Dir: d, Name: pickEntry(d), Dir2: d2, To: pickEntry(d2)}
	case 8:
		d2 := dirs[src.n(len(dirs))]
		return op{Do: "link", Dir: d, Name: pickEntry(d), Dir2: d2, To: name}
	case 9:
		targets := []string{".git", "../.git", "a", filepath.Join(a.root, ".git"), "x/.git", ".git/config"}
		return op{Do: "symlink", Dir: d, Name: name, To: targets[src.n(len(targets))]}
	case 10:
		return op{Do: "unlink", Dir: d, Name: pickEntry(d)}
	case 11:
		return op{Do: "rmdir", Dir: d, Name: pickEntry(d)}
	case 12:
		return op{Do: "chmod", Dir: d, Name: pickEntry(d)}
	case 13:
		return op{Do: "tmpfile", Dir: d, Name: name, Body: a.body(name)}
	case 14:
		return op{Do: "mkdirpath", To: filepath.Join(d, name, name)}
	default:
		return op{Do: "createfollow", Dir: d, Name: pickEntry(d)}
	}
}

// bench makes n files in directories of 100 (mkdirat, then per file
// openat O_CREAT|O_EXCL|O_NOFOLLOW on the directory's descriptor, a write,
// fchownat and a chmod through /proc/self/fd as 9p's setattr does, close)
// and prints the nanoseconds it took.
func (a *actor) bench(arg string) int {
	var n int
	fmt.Sscan(arg, &n)
	start := time.Now()
	var d int
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			if d > 0 {
				unix.Close(d)
			}
			name := fmt.Sprintf("d%d", i/100)
			if err := unix.Mkdirat(a.rfd, name, 0o755); err != nil {
				fmt.Println("mkdir:", err)
				return 1
			}
			var err error
			if d, err = unix.Openat(a.rfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
				fmt.Println("open dir:", err)
				return 1
			}
		}
		name := fmt.Sprintf("f%d", i)
		fd, err := unix.Openat(d, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil {
			fmt.Println("create:", err)
			return 1
		}
		unix.Write(fd, []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"))
		unix.Close(fd)
		unix.Fchownat(d, name, os.Getuid(), os.Getgid(), unix.AT_SYMLINK_NOFOLLOW)
		pfd, err := unix.Openat(d, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Fchmodat(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", pfd), 0o644, 0)
			unix.Close(pfd)
		}
	}
	fmt.Printf("bench-ns %d\n", time.Since(start).Nanoseconds())
	return 0
}
