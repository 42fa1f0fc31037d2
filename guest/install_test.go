package guest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// runInstaller writes progs with the installer into their (temporary)
// paths, as sh would at boot.
func runInstaller(t *testing.T, progs []Program) {
	t.Helper()
	script, err := Installer(progs)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("installer: %v\n%s", err, out)
	}
}

// TestInstaller: every program is written byte for byte (shell syntax,
// quotes, here-document look-alikes and all), mode 0755, in a directory
// the installer makes; a second run replaces nothing that did not change
// and nothing temporary stays.
func TestInstaller(t *testing.T) {
	dir := t.TempDir()
	tricky := "#!/bin/sh\necho \"$HOME\" `id` $(date) '\\'\nEOF\nCORRAL_END_0000000000000000\n\tindented\n"
	progs := []Program{
		{filepath.Join(dir, "bin", "a"), tricky},
		{filepath.Join(dir, "lib", "corral", "b"), "no newline at the end"},
		{filepath.Join(dir, "lib", "corral", "c"), ""},
	}
	runInstaller(t, progs)
	inode := func(p string) uint64 {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v", p, fi.Mode())
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	before := map[string]uint64{}
	for _, p := range progs {
		b, err := os.ReadFile(p.Path)
		want := p.Content
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", p.Path, b, err, want)
		}
		before[p.Path] = inode(p.Path)
	}
	progs[2].Content = "changed\n"
	runInstaller(t, progs)
	for _, p := range progs {
		if same := inode(p.Path) == before[p.Path]; same != (p.Content != "changed\n") {
			t.Errorf("%s: replaced = %v", p.Path, !same)
		}
	}
	if b, _ := os.ReadFile(progs[2].Path); string(b) != "changed\n" {
		t.Errorf("changed program = %q", b)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*", "*.*"))
	more, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*.*"))
	if len(left)+len(more) != 0 {
		t.Errorf("temporary files left: %v %v", left, more)
	}
}

// TestInstallerRefuses: a path that is not a plain absolute path, and a
// program holding its own terminator line, are refused.
func TestInstallerRefuses(t *testing.T) {
	for _, p := range []string{"relative/x", "/a b", "/a;b", "/a$(x)", "/a'b", "/a\nb", ""} {
		if _, err := Installer([]Program{{p, "x\n"}}); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	if _, err := Installer([]Program{{"/x", "a\x00b\n"}}); err == nil {
		t.Error("a NUL byte accepted")
	}
	content := "x\n"
	for range 3 { // the terminator of content, then of content holding it
		s, err := Installer([]Program{{"/x", content}})
		if err != nil {
			break
		}
		end := strings.SplitN(s[strings.Index(s, "put /x <<'")+len("put /x <<'"):], "'", 2)[0]
		holding := content + end + "\n"
		if _, err := Installer([]Program{{"/x", holding}}); err != nil {
			t.Fatalf("a program holding another text's terminator refused: %v", err)
		}
		content = holding
	}
}

// TestProgramsInstalled: the installer carries every program corral
// runs in the box, at the path the scripts and the host name.
func TestProgramsInstalled(t *testing.T) {
	s, err := Installer(Programs())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{LaunchPath, GitCredentialPath, RepoPath, RequestPath, GitShadowPath, UnitPath, ApplyNetworkPath, ApplyProjectPath, SuspendPath} {
		if !strings.Contains(s, "\nput "+p+" <<'CORRAL_END_") {
			t.Errorf("installer lacks %s", p)
		}
	}
}

// FuzzInstaller: whatever a program holds, the installer either refuses
// it or writes exactly that text (with a final newline).
func FuzzInstaller(f *testing.F) {
	f.Add("#!/bin/sh\necho hi\n")
	f.Add("EOF\n'\n\"\n$x\n`y`\n\\\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, content string) {
		p := filepath.Join(t.TempDir(), "prog")
		script, err := Installer([]Program{{p, content}})
		if err != nil {
			return
		}
		if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
			t.Fatalf("installer: %v\n%s", err, out)
		}
		want := content
		if !strings.HasSuffix(want, "\n") {
			want += "\n"
		}
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Fatalf("wrote %q, want %q", b, want)
		}
	})
}
