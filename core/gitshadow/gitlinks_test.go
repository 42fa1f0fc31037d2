package gitshadow

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@example.test", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// lsGitlinks is what git itself says the index's gitlinks are.
func lsGitlinks(t *testing.T, dir string) []string {
	var out []string
	for _, l := range strings.Split(gitT(t, dir, "ls-files", "-s"), "\n") {
		if strings.HasPrefix(l, "160000 ") {
			_, p, _ := strings.Cut(l, "\t")
			if len(out) == 0 || out[len(out)-1] != p {
				out = append(out, p)
			}
		}
	}
	return out
}

// superproject makes a repository with a populated submodule (sub), an
// uninitialized gitlink (deps/empty, its directory present and empty) and
// a gitlink whose path is missing (gone), plus ordinary files.
func superproject(t *testing.T, format string) (proj string, child string) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	base := t.TempDir()
	child = filepath.Join(base, "child")
	proj = filepath.Join(base, "proj")
	for _, d := range []string{child, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		gitT(t, d, "init", "-q", "--object-format="+format)
	}
	mustGL(t, os.WriteFile(filepath.Join(child, "c.txt"), []byte("c\n"), 0o644))
	gitT(t, child, "add", ".")
	gitT(t, child, "commit", "-qm", "child")
	head := gitT(t, child, "rev-parse", "HEAD")
	mustGL(t, os.WriteFile(filepath.Join(proj, "a.txt"), []byte("a\n"), 0o644))
	mustGL(t, os.MkdirAll(filepath.Join(proj, "dir with space", "deep"), 0o755))
	mustGL(t, os.WriteFile(filepath.Join(proj, "dir with space", "deep", "f"), []byte("f\n"), 0o644))
	gitT(t, proj, "add", ".")
	gitT(t, proj, "submodule", "add", "-q", child, "sub")
	gitT(t, proj, "update-index", "--add", "--cacheinfo", "160000,"+head+",deps/empty")
	gitT(t, proj, "update-index", "--add", "--cacheinfo", "160000,"+head+",gone")
	mustGL(t, os.MkdirAll(filepath.Join(proj, "deps", "empty"), 0o755))
	gitT(t, proj, "commit", "-qm", "super")
	return proj, child
}

func mustGL(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestIndexGitlinksMatchesGit(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		for _, version := range []string{"2", "3", "4"} {
			t.Run(format+"/v"+version, func(t *testing.T) {
				proj, _ := superproject(t, format)
				gitT(t, proj, "update-index", "--index-version", version)
				if version == "3" {
					// An extended flag (intent-to-add) makes git write v3 entries.
					mustGL(t, os.WriteFile(filepath.Join(proj, "ita.txt"), []byte("x\n"), 0o644))
					gitT(t, proj, "add", "-N", "ita.txt")
				}
				want := lsGitlinks(t, proj)
				got, err := IndexGitlinks(filepath.Join(proj, ".git", "index"))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) || len(want) != 3 {
					t.Errorf("gitlinks = %q, git says %q", got, want)
				}
			})
		}
	}
}

func TestGitlinksClassify(t *testing.T) {
	proj, _ := superproject(t, "sha1")
	d, err := Find(proj)
	mustGL(t, err)
	links, err := d.Gitlinks()
	mustGL(t, err)
	kinds := map[string]GitlinkKind{}
	for _, g := range links {
		rel, _ := filepath.Rel(proj, g.Path)
		kinds[rel] = g.Kind
		if rel == "sub" {
			if g.DotGit != filepath.Join(proj, "sub", ".git") || g.GitDir != filepath.Join(proj, ".git", "modules", "sub") {
				t.Errorf("sub: %+v", g)
			}
		}
	}
	want := map[string]GitlinkKind{"sub": GitlinkPopulated, "deps/empty": GitlinkEmpty, "gone": GitlinkEmpty}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("%s: %v, want %v (all: %v)", k, kinds[k], v, kinds)
		}
	}

	// What the box might leave at a gitlink path, seen at the next start.
	mustGL(t, os.Symlink("/", filepath.Join(proj, "gone")))
	links, err = d.Gitlinks()
	mustGL(t, err)
	for _, g := range links {
		if strings.HasSuffix(g.Path, "/gone") && (g.Kind != GitlinkRefused || !strings.Contains(g.Why, "symbolic link")) {
			t.Errorf("a symlink at a gitlink path: %+v", g)
		}
	}
	mustGL(t, os.Remove(filepath.Join(proj, "gone")))
	mustGL(t, os.WriteFile(filepath.Join(proj, "gone"), nil, 0o644))
	links, _ = d.Gitlinks()
	for _, g := range links {
		if strings.HasSuffix(g.Path, "/gone") && g.Kind != GitlinkRefused {
			t.Errorf("a file at a gitlink path: %+v", g)
		}
	}
	// A .git symlink in an empty gitlink path is refused, never followed.
	mustGL(t, os.Symlink(filepath.Join(proj, ".git"), filepath.Join(proj, "deps", "empty", ".git")))
	links, _ = d.Gitlinks()
	for _, g := range links {
		if strings.HasSuffix(g.Path, "deps/empty") && g.Kind != GitlinkRefused {
			t.Errorf("a .git symlink: %+v", g)
		}
	}
}

func TestGitlinksNested(t *testing.T) {
	proj, child := superproject(t, "sha1")
	// The child gets a submodule of its own; the superproject updates.
	inner := filepath.Join(filepath.Dir(child), "inner")
	mustGL(t, os.MkdirAll(inner, 0o755))
	gitT(t, inner, "init", "-q")
	gitT(t, inner, "commit", "-q", "--allow-empty", "-m", "inner")
	gitT(t, child, "submodule", "add", "-q", inner, "in")
	gitT(t, child, "commit", "-qm", "nested")
	gitT(t, filepath.Join(proj, "sub"), "pull", "-q", "origin", "main")
	gitT(t, filepath.Join(proj, "sub"), "submodule", "update", "--init", "-q")
	d, err := Find(proj)
	mustGL(t, err)
	links, err := d.Gitlinks()
	mustGL(t, err)
	var found *Gitlink
	for i := range links {
		if links[i].Path == filepath.Join(proj, "sub", "in") {
			found = &links[i]
		}
	}
	if found == nil || found.Kind != GitlinkPopulated || found.GitDir != filepath.Join(proj, ".git", "modules", "sub", "modules", "in") {
		t.Errorf("nested submodule: %+v in %+v", found, links)
	}
}

func TestParseIndexGitlinksRefuses(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":       nil,
		"signature":   []byte("DIRX\x00\x00\x00\x02\x00\x00\x00\x00"),
		"version":     []byte("DIRC\x00\x00\x00\x05\x00\x00\x00\x00"),
		"huge count":  []byte("DIRC\x00\x00\x00\x02\xff\xff\xff\xff"),
		"truncated":   []byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01\x00"),
		"one no path": append([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), make([]byte, 62)...),
	} {
		if _, err := ParseIndexGitlinks(b, false); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A gitlink whose path climbs out is refused.
	e := make([]byte, 62)
	copy(e[24:28], []byte{0, 0, 0xe0, 0}) // mode 0160000
	e[61] = 4                             // the name's length, in the flags
	e = append(e, "../x\x00"...)
	for len(e)%8 != 0 {
		e = append(e, 0)
	}
	if _, err := ParseIndexGitlinks(append([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), e...), false); err == nil || !strings.Contains(err.Error(), "clean") {
		t.Errorf("a ../ gitlink: %v", err)
	}
}

func FuzzParseIndexGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00"), false)
	e := make([]byte, 62)
	copy(e[24:28], []byte{0, 0, 0xe0, 0})
	e[61] = 3
	e = append(e, "lib\x00\x00\x00\x00\x00\x00\x00"...)
	f.Add(append([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"), e...), false)
	f.Add(append([]byte("DIRC\x00\x00\x00\x04\x00\x00\x00\x01"), append(e[:62:62], "\x00lib\x00"...)...), false)
	f.Fuzz(func(t *testing.T, b []byte, sha256 bool) {
		links, err := ParseIndexGitlinks(b, sha256)
		if err != nil {
			return
		}
		if len(links) > len(b) {
			t.Fatalf("%d gitlinks from %d bytes", len(links), len(b))
		}
		for _, l := range links {
			if !cleanIndexPath(l) {
				t.Fatalf("unclean path %q accepted", l)
			}
		}
	})
}

// TestSplitIndex: a repository with core.splitIndex, whose split index
// replaces, deletes and adds entries of its shared index (a gitlink made a
// file, a gitlink removed, gitlinks added, a file made a gitlink), for
// both object formats and every index version: the gitlinks are git's.
func TestSplitIndex(t *testing.T) {
	for _, format := range []string{"sha1", "sha256"} {
		for _, version := range []string{"2", "4"} {
			t.Run(format+"/v"+version, func(t *testing.T) {
				proj, child := superproject(t, format)
				head := gitT(t, child, "rev-parse", "HEAD")
				gitT(t, proj, "update-index", "--index-version", version)
				gitT(t, proj, "config", "core.splitIndex", "true")
				gitT(t, proj, "config", "splitIndex.maxPercentChange", "100")
				gitT(t, proj, "update-index", "--split-index")
				if _, err := os.Stat(filepath.Join(proj, ".git", "index")); err != nil {
					t.Fatal(err)
				}
				// Changes that stay in the split index.
				gitT(t, proj, "update-index", "--force-remove", "gone")
				gitT(t, proj, "update-index", "--add", "--cacheinfo", "160000,"+head+",added/one")
				gitT(t, proj, "update-index", "--cacheinfo", "160000,"+head+",a.txt")
				gitT(t, proj, "update-index", "--add", "--cacheinfo", "160000,"+head+",zz")
				shared, _ := filepath.Glob(filepath.Join(proj, ".git", "sharedindex.*"))
				if len(shared) == 0 {
					t.Fatal("git wrote no shared index")
				}
				want := lsGitlinks(t, proj)
				slices.Sort(want)
				got, err := IndexGitlinks(filepath.Join(proj, ".git", "index"))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("gitlinks = %q, git says %q", got, want)
				}
				// A missing shared index names the setting.
				for _, s := range shared {
					mustGL(t, os.Rename(s, s+".away"))
				}
				if _, err := IndexGitlinks(filepath.Join(proj, ".git", "index")); err == nil || !strings.Contains(err.Error(), "core.splitIndex") {
					t.Errorf("without its shared index: %v", err)
				}
			})
		}
	}
}

// FuzzEWAH: any bitmap bytes decode or fail, never panic, and every bit
// returned is below the limit.
func FuzzEWAH(f *testing.F) {
	f.Add([]byte{0, 0, 0, 64, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0}, 100)
	f.Fuzz(func(t *testing.T, b []byte, limit int) {
		if limit < 0 || limit > 1<<16 {
			return
		}
		bits, n, err := ewahBits(b, limit)
		if err != nil {
			return
		}
		if n > len(b) {
			t.Fatalf("read %d of %d bytes", n, len(b))
		}
		for _, p := range bits {
			if p < 0 || p >= limit {
				t.Fatalf("bit %d with limit %d", p, limit)
			}
		}
	})
}
