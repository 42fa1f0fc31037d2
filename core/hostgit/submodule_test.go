package hostgit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gitIn runs git with stdin in dir (mktree, hash-object --stdin).
func gitIn(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := gitCmd(dir, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// entry is one tree entry for commitTree: path may have one "/" (a
// subtree of one entry). oid "" is a new blob with the path as content.
type entry struct{ mode, path, oid string }

// commitTree commits, on top of box's HEAD, HEAD's tree plus entries,
// written with git mktree, which checks no name: it makes the trees a
// hostile box can (".git" entries, any case, any byte), which the index
// would refuse.
func commitTree(t *testing.T, box string, entries ...entry) string {
	t.Helper()
	base := gitIn(t, box, "", "ls-tree", "HEAD")
	lines := []string{base}
	for _, e := range entries {
		oid := e.oid
		if oid == "" {
			oid = gitIn(t, box, e.path, "hash-object", "-w", "--stdin")
		}
		typ := map[string]string{"160000": "commit", "040000": "tree"}[e.mode]
		if typ == "" {
			typ = "blob"
		}
		name := e.path
		if dir, file, ok := strings.Cut(e.path, "/"); ok {
			oid = gitIn(t, box, e.mode+" "+typ+" "+oid+"\t"+file+"\n", "mktree")
			name, typ, e.mode = dir, "tree", "040000"
		}
		lines = append(lines, e.mode+" "+typ+" "+oid+"\t"+name)
	}
	tree := gitIn(t, box, strings.Join(lines, "\n")+"\n", "mktree")
	c := gitIn(t, box, "", "commit-tree", tree, "-p", "HEAD", "-m", "box change")
	git(t, box, "update-ref", "refs/heads/"+git(t, box, "symbolic-ref", "--short", "HEAD"), c)
	return c
}

// hostState is everything a refused pull must leave as it was: every ref,
// the work tree (.git's own files aside) and the objects directory.
func hostState(t *testing.T, host string) string {
	t.Helper()
	refs := git(t, host, "for-each-ref", "--format=%(refname) %(objectname)")
	var wt []string
	ents, _ := os.ReadDir(host)
	for _, e := range ents {
		if e.Name() != ".git" {
			wt = append(wt, e.Name()+" "+treeHash(t, filepath.Join(host, e.Name())))
		}
	}
	return refs + "\n" + strings.Join(wt, "\n") + "\n" + treeHash(t, filepath.Join(host, ".git", "objects"))
}

// pullBox bundles box's branches for the host (as corral-repo does) and
// fetches it.
func pullBox(t *testing.T, host, box string, opt FetchOptions) (Result, error) {
	t.Helper()
	ctx := context.Background()
	r, err := Open(host)
	must(t, err)
	haves, err := r.Haves(ctx, "web-1")
	must(t, err)
	bundle := filepath.Join(t.TempDir(), "b.bundle")
	if err := gitCmd(box, append([]string{"bundle", "create", "-q", bundle, "--branches", "--not"}, haves...)...).Run(); err != nil {
		git(t, box, "bundle", "create", "-q", bundle, "--branches")
	}
	in, err := os.Open(bundle)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
	must(t, err)
	return r.Fetch(ctx, b, boxHeads(t, box), "web-1", opt)
}

// TestFetchRefusesAGitlink is the attack: the box commits a gitlink (and
// makes the nested repository in its work tree); the user would pull,
// merge, and run git status, which enters the path and runs its config.
// The pull is refused naming branch and path, and changes nothing; with
// AllowSubmodules it is taken and the result names the path.
func TestFetchRefusesAGitlink(t *testing.T) {
	host, box := hostAndBox(t)
	git(t, box, "checkout", "-q", "-b", "topic")
	head := git(t, box, "rev-parse", "HEAD")
	git(t, box, "update-index", "--add", "--cacheinfo", "160000,"+head+",vendor/evil")
	git(t, box, "commit", "-q", "-m", "add a gitlink")
	git(t, box, "commit", "-q", "--allow-empty", "-m", "later")
	before := hostState(t, host)

	_, err := pullBox(t, host, box, FetchOptions{})
	var se *SubmoduleError
	if !errors.Is(err, ErrSubmodules) || !errors.As(err, &se) {
		t.Fatalf("err = %v, want a SubmoduleError", err)
	}
	if len(se.Branches) != 1 || se.Branches[0] != "topic" || len(se.Changes) != 1 ||
		se.Changes[0].Path != "vendor/evil" || se.Changes[0].Kind != KindGitlink {
		t.Errorf("refusal %+v", se)
	}
	if msg := err.Error(); !strings.Contains(msg, "on branch topic:") || !strings.Contains(msg, "vendor/evil (gitlink") {
		t.Errorf("message does not name branch and path:\n%s", msg)
	}
	if after := hostState(t, host); after != before {
		t.Errorf("a refused pull changed the host:\nbefore %q\nafter  %q", before, after)
	}

	res, err := pullBox(t, host, box, FetchOptions{AllowSubmodules: true})
	must(t, err)
	if len(res.Submodules) != 1 || res.Submodules[0].Path != "vendor/evil" || len(res.SubmoduleBranches) != 1 {
		t.Errorf("allowed pull %+v", res)
	}
	if got := git(t, host, "rev-parse", RemotePrefix("web-1")+"topic"); got != git(t, box, "rev-parse", "topic") {
		t.Errorf("topic = %s", got)
	}
	// Taken once, the change is the host's: the next pull is not refused.
	git(t, box, "commit", "-q", "--allow-empty", "-m", "more")
	if _, err := pullBox(t, host, box, FetchOptions{}); err != nil {
		t.Errorf("pull after an allowed gitlink: %v", err)
	}
}

// TestFetchRefusesSubmoduleVariants: every name a file system may take
// for .gitmodules or .git, a symlink .gitmodules, a change to an existing
// .gitmodules, a gitlink that only a merge brings, a gitlink changed: all
// refused, nothing changed. A deleted .gitmodules is not.
func TestFetchRefusesSubmoduleVariants(t *testing.T) {
	needGit(t)
	gm := "[submodule \"x\"]\n\tpath = x\n\turl = ./x\n"
	tests := []struct {
		name    string
		entries []entry
		kind    ChangeKind
	}{
		{".gitmodules", []entry{{"100644", ".gitmodules", ""}}, KindGitmodules},
		{"upper case", []entry{{"100644", ".GITMODULES", ""}}, KindGitmodules},
		{"symlink", []entry{{"120000", ".gitmodules", ""}}, KindGitmodules},
		{"hfs ignorable", []entry{{"100644", ".git\u200cmodules", ""}}, KindGitmodules},
		{"ntfs trailing", []entry{{"100644", ".gitmodules .", ""}}, KindGitmodules},
		{"ntfs stream", []entry{{"100644", ".gitmodules::$DATA", ""}}, KindGitmodules},
		{"ntfs short", []entry{{"100644", "GITMOD~1", ""}}, KindGitmodules},
		{"ntfs fallback short", []entry{{"100644", "gi7eba~4", ""}}, KindGitmodules},
		{"nested", []entry{{"100644", "sub/.gitmodules", ""}}, KindGitmodules},
		{".git tree", []entry{{"100644", ".git/config", ""}}, KindDotGit},
		{".GIT tree", []entry{{"100644", ".GIT/config", ""}}, KindDotGit},
		{"git~1", []entry{{"100644", "git~1/config", ""}}, KindDotGit},
		{".git file in a subdirectory", []entry{{"100644", "sub/.git", ""}}, KindDotGit},
		{"hfs .git", []entry{{"100644", ".g\u200dit/config", ""}}, KindDotGit},
		{"backslash", []entry{{"100644", "a\\.git\\config", ""}}, KindDotGit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, box := hostAndBox(t)
			for i := range tt.entries {
				if tt.entries[i].mode == "120000" {
					tt.entries[i].oid = gitIn(t, box, "/etc", "hash-object", "-w", "--stdin")
				}
			}
			commitTree(t, box, tt.entries...)
			before := hostState(t, host)
			_, err := pullBox(t, host, box, FetchOptions{})
			var se *SubmoduleError
			if !errors.As(err, &se) {
				// git's fsck may refuse some first: refused all the same.
				if !errors.Is(err, ErrBundle) {
					t.Fatalf("err = %v, want a refusal", err)
				}
				t.Logf("refused by git: %v", err)
			} else if len(se.Changes) != 1 || se.Changes[0].Kind != tt.kind || len(se.Branches) != 1 || se.Branches[0] != "main" {
				t.Errorf("refusal %+v", se)
			}
			if after := hostState(t, host); after != before {
				t.Error("a refused pull changed the host")
			}
		})
	}

	t.Run("changed .gitmodules, merged gitlink, changed gitlink", func(t *testing.T) {
		host, box := hostAndBox(t)
		sub := git(t, host, "rev-parse", "HEAD")
		// The host already has a submodule: gitlink and .gitmodules.
		must(t, os.WriteFile(filepath.Join(host, ".gitmodules"), []byte(gm), 0o644))
		git(t, host, "add", ".gitmodules")
		git(t, host, "update-index", "--add", "--cacheinfo", "160000,"+sub+",x")
		git(t, host, "commit", "-q", "-m", "a submodule")
		git(t, box, "pull", "-q", "--no-rebase", "origin", "main")

		// One branch changes .gitmodules, one moves the gitlink, one
		// merges a side branch that added a second gitlink.
		git(t, box, "checkout", "-q", "-b", "modules")
		must(t, os.WriteFile(filepath.Join(box, ".gitmodules"), []byte(strings.Replace(gm, "./x", "./elsewhere", 1)), 0o644))
		git(t, box, "commit", "-q", "-am", "change .gitmodules")
		git(t, box, "checkout", "-q", "-b", "moved", "main")
		git(t, box, "update-index", "--cacheinfo", "160000,"+strings.Repeat("1", 40)+",x")
		git(t, box, "commit", "-q", "-m", "move the gitlink")
		git(t, box, "checkout", "-q", "-b", "side", "main")
		git(t, box, "update-index", "--add", "--cacheinfo", "160000,"+sub+",y")
		git(t, box, "commit", "-q", "-m", "side gitlink")
		git(t, box, "checkout", "-q", "-b", "merged", "main")
		git(t, box, "commit", "-q", "--allow-empty", "-m", "main side")
		git(t, box, "merge", "-q", "--no-edit", "side")
		git(t, box, "branch", "-q", "-D", "side")
		before := hostState(t, host)
		_, err := pullBox(t, host, box, FetchOptions{})
		var se *SubmoduleError
		if !errors.As(err, &se) {
			t.Fatalf("err = %v", err)
		}
		paths := map[string]ChangeKind{}
		for _, c := range se.Changes {
			paths[c.Path] = c.Kind
		}
		if paths[".gitmodules"] != KindGitmodules || paths["x"] != KindGitlink || paths["y"] != KindGitlink ||
			strings.Join(se.Branches, ",") != "merged,modules,moved" {
			t.Errorf("refusal %+v", se)
		}
		if after := hostState(t, host); after != before {
			t.Error("a refused pull changed the host")
		}
	})

	t.Run("config cannot hide a gitlink", func(t *testing.T) {
		host, box := hostAndBox(t)
		// The host's config and the work tree's .gitmodules (which the box
		// writes) both ask diffs to ignore submodules.
		git(t, host, "config", "diff.ignoreSubmodules", "all")
		must(t, os.WriteFile(filepath.Join(host, ".gitmodules"), []byte(gm+"\tignore = all\n"), 0o644))
		head := git(t, box, "rev-parse", "HEAD")
		git(t, box, "update-index", "--add", "--cacheinfo", "160000,"+head+",x")
		git(t, box, "commit", "-q", "-m", "gitlink")
		if _, err := pullBox(t, host, box, FetchOptions{}); !errors.Is(err, ErrSubmodules) {
			t.Errorf("err = %v", err)
		}
	})

	t.Run("deleting is not refused", func(t *testing.T) {
		host, box := hostAndBox(t)
		must(t, os.WriteFile(filepath.Join(host, ".gitmodules"), []byte(gm), 0o644))
		git(t, host, "add", ".gitmodules")
		git(t, host, "commit", "-q", "-m", "modules")
		git(t, box, "pull", "-q", "--no-rebase", "origin", "main")
		git(t, box, "rm", "-q", ".gitmodules")
		git(t, box, "commit", "-q", "-m", "no modules")
		if res, err := pullBox(t, host, box, FetchOptions{}); err != nil || len(res.Submodules) != 0 {
			t.Errorf("%+v %v", res, err)
		}
	})
}

func TestClassifyPath(t *testing.T) {
	bad := []string{
		".gitmodules", ".GitModules", ".gitmodules.", ".gitmodules ", ".gitmodules:x", "\u200c.gitmodules",
		".gitmodules\ufeff", "GITMOD~1", "gitmod~4 .", "GI7EBA~1", "gi7eba~9",
		".git", ".GIT", ".git.", "git~1", "GIT~1 ", ".git:$INDEX_ALLOCATION", ".g\u200cit", "\ufeff.git",
		"a/.git/hooks/x", "a\\.git", "x/.gitmodules",
	}
	for _, p := range bad {
		if _, _, ok := classifyPath(p, "100644"); !ok {
			t.Errorf("classifyPath(%q) not flagged", p)
		}
	}
	good := []string{".gitignore", ".gitattributes", "gitmodules", ".gitmodulesx", ".gitx", "git~2", "gitmod~5", "a.git", ".github/x", "gitmo~1", ".git\xffmodules", "GITMOD~", ""}
	for _, p := range good {
		if k, _, ok := classifyPath(p, "100644"); ok {
			t.Errorf("classifyPath(%q) flagged %s", p, k)
		}
	}
	if k, at, ok := classifyPath("any/path", "160000"); !ok || k != KindGitlink || at != "any/path" {
		t.Error("gitlink not flagged")
	}
	if k, at, ok := classifyPath("a/.GIT/hooks/x", "100755"); !ok || k != KindDotGit || at != "a/.GIT" {
		t.Errorf("a/.GIT/hooks/x: %s at %q", k, at)
	}
}

// TestClassifyPathMatchesGitFsck: names git's own fsck calls .git or
// .gitmodules (hasDotgit; gitmodulesSymlink for a symlink) are flagged
// here too.
func TestClassifyPathMatchesGitFsck(t *testing.T) {
	needGit(t)
	for _, name := range []string{".GIT", "git~1", ".git.", ".gi\u200ct", ".GitModules", "GITMOD~1", ".gitmodules .", "gi7eba~9"} {
		repo := t.TempDir()
		git(t, repo, "init", "-q")
		blob := gitIn(t, repo, "x", "hash-object", "-w", "--stdin")
		gitIn(t, repo, "120000 blob "+blob+"\t"+name+"\n", "mktree")
		out, _ := gitCmd(repo, "fsck", "--no-dangling", "--strict").CombinedOutput()
		if !strings.Contains(string(out), "hasDotgit") && !strings.Contains(string(out), "gitmodulesSymlink") {
			t.Errorf("git fsck does not flag %q: %s", name, out)
		}
		if _, _, ok := classifyPath(name, "120000"); !ok {
			t.Errorf("git fsck flags %q, classifyPath does not", name)
		}
	}
}
