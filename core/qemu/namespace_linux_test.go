package qemu

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The test binary plays the wrapper: run with nsTestEnv set it is the
// first run, or the stage once EnterNamespace has set StageEnv.
const nsTestEnv = "CORRAL_NS_TEST"

func TestMain(m *testing.M) {
	_, marked := os.LookupEnv(StageEnv)
	switch {
	case os.Getenv(nsTestEnv) != "" && !marked:
		err := EnterNamespace(os.Args, os.Environ())
		os.Stderr.WriteString("enter: " + err.Error() + "\n")
		os.Exit(3)
	case os.Getenv(nsTestEnv) != "":
		staged, err := InStage()
		if err != nil || !staged {
			os.Stderr.WriteString("not staged: " + strconv.FormatBool(staged) + " " + errString(err) + "\n")
			os.Exit(4)
		}
		var private []PrivateMount
		for _, pair := range strings.Split(os.Getenv("CORRAL_NS_TEST_PRIVATE"), ":") {
			if src, dst, ok := strings.Cut(pair, "="); ok {
				private = append(private, PrivateMount{Source: src, Target: dst})
			}
		}
		for _, pair := range strings.Split(os.Getenv("CORRAL_NS_TEST_HIDDEN"), ":") {
			if src, dst, ok := strings.Cut(pair, "="); ok {
				private = append(private, PrivateMount{Source: src, Target: dst, Kind: PrivateHidden})
			}
		}
		if err := MountPrivate(private); err != nil {
			os.Stderr.WriteString("private: " + err.Error() + "\n")
			os.Exit(5)
		}
		if err := BindReadOnly(strings.Split(os.Getenv("CORRAL_NS_TEST_RO"), ":")); err != nil {
			os.Stderr.WriteString("bind: " + err.Error() + "\n")
			os.Exit(5)
		}
		err = ExecWithoutCaps("/bin/sh", []string{"sh", "-c", os.Getenv("CORRAL_NS_TEST_SH")}, os.Environ())
		os.Stderr.WriteString("exec: " + err.Error() + "\n")
		os.Exit(6)
	}
	os.Exit(m.Run())
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestNamespaceStage runs the real chain (unshare(1), the bind, the exec
// without capabilities) and checks what the wrapper promises Lima and the
// user: the same PID from start to the final program, writes under the
// bound paths fail with EROFS (a gitdir file too), writes elsewhere succeed
// with the user's ownership, the final program has no capabilities, and
// the stage marker without a new namespace is refused.
func TestNamespaceStage(t *testing.T) {
	if err := CheckNamespaces(); err != nil {
		t.Skipf("no user namespaces here: %v", err)
	}
	proj := t.TempDir()
	gitDir := filepath.Join(proj, ".git")
	wt := filepath.Join(t.TempDir(), "wt")
	for _, d := range []string{filepath.Join(gitDir, "hooks"), wt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(gitDir, "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+gitDir+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo "pid $$"
(echo x >> "$P/.git/config") 2>/dev/null && echo "config writable"
(echo x > "$P/.git/hooks/pre-commit") 2>/dev/null && echo "hook writable"
(echo x >> "$W/.git") 2>/dev/null && echo "gitdir file writable"
echo ok > "$P/work.txt" || echo "work not writable"
grep CapEff /proc/self/status
git init -q "$P/vendor/lib" 2>/dev/null || mkdir -p "$P/vendor/lib/.git"
echo fsmonitor > "$P/vendor/lib/.git/config"
rmdir "$P/vendor/lib" 2>/dev/null && echo "private path removed"
cat "$P/secret/key" 2>/dev/null && echo "hidden key read"
ls -A "$P/secret" | grep -q . && echo "hidden dir listed"
grep -q TOKEN "$P/.env" && echo "hidden file read"
(echo x > "$P/secret/new") 2>/dev/null && echo "hidden dir writable"
(echo x >> "$P/.env") 2>/dev/null && echo "hidden file writable"
umount "$P/secret" 2>/dev/null && echo "hidden dir unmounted"
true
`
	// What the config hides: a directory and a file, covered by corral's
	// empty read-only ones.
	if err := os.MkdirAll(filepath.Join(proj, "secret"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"secret/key": "KEY\n", ".env": "TOKEN=1\n"} {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	emptyDir, emptyFile := filepath.Join(t.TempDir(), "empty"), filepath.Join(t.TempDir(), "empty-file")
	if err := os.Mkdir(emptyDir, 0o500); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(emptyFile, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	privSrc := filepath.Join(t.TempDir(), "gitlinks", "b", "0123")
	cmd.Env = append(os.Environ(), nsTestEnv+"=first", "CORRAL_NS_TEST_RO="+gitDir+":"+filepath.Join(wt, ".git"),
		"CORRAL_NS_TEST_PRIVATE="+privSrc+"="+filepath.Join(proj, "vendor", "lib"),
		"CORRAL_NS_TEST_HIDDEN="+emptyDir+"="+filepath.Join(proj, "secret")+":"+emptyFile+"="+filepath.Join(proj, ".env"),
		"CORRAL_NS_TEST_SH="+script, "P="+proj, "W="+wt)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Wait(); err != nil {
		t.Fatalf("chain failed: %v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "pid "+strconv.Itoa(pid)+"\n") {
		t.Errorf("the final program is not the started process %d:\n%s", pid, got)
	}
	// The empty submodule path: created on the host, empty there; what
	// the "VM" wrote went to the box's own directory.
	if ents, err := os.ReadDir(filepath.Join(proj, "vendor", "lib")); err != nil || len(ents) != 0 {
		t.Errorf("the host's submodule path holds %v (%v), want an empty directory", ents, err)
	}
	if b, err := os.ReadFile(filepath.Join(privSrc, ".git", "config")); err != nil || string(b) != "fsmonitor\n" {
		t.Errorf("the box's private directory: %q, %v", b, err)
	}
	for _, bad := range []string{"config writable", "hook writable", "gitdir file writable", "work not writable", "private path removed",
		"hidden key read", "hidden dir listed", "hidden file read", "hidden dir writable", "hidden file writable"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s:\n%s", bad, got)
		}
	}
	// uid 0 keeps capabilities in its namespace whatever the stage drops;
	// corral never runs as root (Lima refuses it).
	if os.Getuid() != 0 && !strings.Contains(got, "CapEff:\t0000000000000000") {
		t.Errorf("qemu would keep capabilities:\n%s", got)
	}
	if os.Getuid() != 0 && strings.Contains(got, "hidden dir unmounted") {
		t.Errorf("qemu could unmount what hides a path:\n%s", got)
	}
	fi, err := os.Stat(filepath.Join(proj, "work.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := statUID(fi); uid != os.Getuid() {
		t.Errorf("file written in the namespace is owned by %d, want %d", uid, os.Getuid())
	}
	if b, _ := os.ReadFile(filepath.Join(proj, ".env")); string(b) != "TOKEN=1\n" {
		t.Errorf("the hidden file changed on the host: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config changed: %q", b)
	}

	// A forged marker (no unshare happened) is refused.
	ns, err := userNamespace()
	if err != nil {
		t.Fatal(err)
	}
	forged := exec.Command(os.Args[0])
	forged.Env = append(os.Environ(), nsTestEnv+"=stage", StageEnv+"="+ns)
	if b, err := forged.CombinedOutput(); err == nil || !strings.Contains(string(b), "not in a new user namespace") {
		t.Errorf("forged stage marker: err %v, output %s", err, b)
	}
}

func statUID(fi fs.FileInfo) int { return int(fi.Sys().(*syscall.Stat_t).Uid) }
