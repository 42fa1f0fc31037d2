package recent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// mkrepo makes dir/name with a .git directory changed at mod.
func mkrepo(t *testing.T, dir, name string, mod time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Join(p, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(p, ".git"), mod, mod); err != nil {
		t.Fatal(err)
	}
	return p
}

func real(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func found(rs []Repo) []string {
	var out []string
	for _, r := range rs {
		out = append(out, filepath.Base(r.Dir))
	}
	return out
}

func TestScanRoots(t *testing.T) {
	root := real(t, t.TempDir())
	outside := real(t, t.TempDir())
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	mkrepo(t, root, "old", t0)
	mkrepo(t, root, "new", t0.Add(time.Hour))
	// A worktree or submodule checkout: .git is a file.
	if err := os.MkdirAll(filepath.Join(root, "wt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "wt", ".git"), []byte("gitdir: /x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(filepath.Join(root, "wt", ".git"), t0.Add(-time.Hour), t0.Add(-time.Hour))
	// Not repositories, or not to be followed.
	os.MkdirAll(filepath.Join(root, "plain"), 0o755)
	mkrepo(t, root, ".hidden", t0)
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	target := mkrepo(t, outside, "secret", t0.Add(2*time.Hour))
	if err := os.Symlink(target, filepath.Join(root, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "new"), filepath.Join(root, "link-in")); err != nil {
		t.Fatal(err)
	}
	// .git itself a symlink to a repository elsewhere.
	os.MkdirAll(filepath.Join(root, "gitlink"), 0o755)
	if err := os.Symlink(filepath.Join(target, ".git"), filepath.Join(root, "gitlink", ".git")); err != nil {
		t.Fatal(err)
	}

	got := ScanRoots([]string{root, "relative/root", filepath.Join(root, "missing"), root})
	if want := []string{"new", "old", "wt"}; !slices.Equal(found(got), want) {
		t.Fatalf("found %q, want %q", found(got), want)
	}
	for _, r := range got {
		if r.Root != root || filepath.Dir(r.Dir) != root {
			t.Errorf("repo %+v not directly below %s", r, root)
		}
	}

	// A root that is itself a symlink (the user's own config) is resolved.
	link := filepath.Join(outside, "src-link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	if got := ScanRoots([]string{link}); len(got) != 3 || got[0].Dir != filepath.Join(root, "new") {
		t.Errorf("through a root symlink: %+v", got)
	}
}

// TestScanRootsHostileNames: names are returned exactly (display is the
// caller's edge); nothing in them is interpreted.
func TestScanRootsHostileNames(t *testing.T) {
	root := real(t, t.TempDir())
	names := []string{"we\x1b[31mb", "line\nbreak", "bidi\u202egnp.exe", "-rf", "..dots", "space name"}
	for _, n := range names {
		mkrepo(t, root, n, time.Now())
	}
	got := ScanRoots([]string{root})
	var gotNames []string
	for _, r := range got {
		gotNames = append(gotNames, filepath.Base(r.Dir))
		if _, err := os.Stat(filepath.Join(r.Dir, ".git")); err != nil {
			t.Errorf("%q: %v", r.Dir, err)
		}
	}
	want := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "..dots" }) // hidden
	slices.Sort(want)
	slices.Sort(gotNames)
	if !slices.Equal(gotNames, want) {
		t.Errorf("found %q, want %q", gotNames, want)
	}
}

func TestScanRootsCaps(t *testing.T) {
	root := real(t, t.TempDir())
	for i := range MaxScan + 100 {
		mkrepo(t, root, fmt.Sprintf("r%04d", i), time.Now())
	}
	got := ScanRoots([]string{root})
	if len(got) != MaxFound {
		t.Errorf("%d found, want the cap %d", len(got), MaxFound)
	}
	// Each root reads at most MaxScan entries: with MaxFound above the
	// count of repositories a root can give, the scan cap is what limits.
	if n := len(scanRoot(root)); n != MaxScan {
		t.Errorf("scanned %d entries, want %d", n, MaxScan)
	}
	var roots []string
	for i := range MaxRoots + 4 {
		r := real(t, t.TempDir())
		mkrepo(t, r, fmt.Sprintf("only%02d", i), time.Now().Add(time.Duration(i)*time.Minute))
		roots = append(roots, r)
	}
	if got := ScanRoots(roots); len(got) != MaxRoots {
		t.Errorf("%d roots gave repositories, want %d", len(got), MaxRoots)
	}
}

func TestExpandRoot(t *testing.T) {
	for in, want := range map[string]string{
		"~/src": "/home/u/src", "~": "/home/u", "/srv/code/": "/srv/code", "src": "", "~other/x": "", "": "",
	} {
		if got := ExpandRoot(in, "/home/u"); got != want {
			t.Errorf("ExpandRoot(%q) = %q, want %q", in, got, want)
		}
	}
	if got := ExpandRoot("~/src", ""); got != "" {
		t.Errorf("no home: %q", got)
	}
}

func TestCheckDir(t *testing.T) {
	root := real(t, t.TempDir())
	d := mkrepo(t, root, "web", time.Now())
	if err := CheckDir(d); err != nil {
		t.Errorf("plain dir: %v", err)
	}
	os.Symlink(d, filepath.Join(root, "swapped"))
	if err := CheckDir(filepath.Join(root, "swapped")); err == nil {
		t.Error("a symlink passed")
	}
	if err := CheckDir(filepath.Join(root, "swapped", ".git")); err == nil {
		t.Error("a path through a symlink passed")
	}
	if err := CheckDir(filepath.Join(root, "nope")); err == nil {
		t.Error("a missing dir passed")
	}
}
