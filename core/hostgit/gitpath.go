package hostgit

import (
	"strings"

	"github.com/corral-dev/corral/core/dotgit"
)

// ChangeKind is why a path in a pulled commit would bring a repository to
// the host.
type ChangeKind string

const (
	// KindGitlink is a tree entry of mode 160000: a submodule commit. After
	// a merge the host's git descends into that path (git status, diff,
	// checkout) and runs the repository there: its config, core.fsmonitor
	// included, and its hooks.
	KindGitlink ChangeKind = "gitlink"
	// KindGitmodules is a .gitmodules (any case, any name a case-folding or
	// HFS+/NTFS file system treats as it, a symlink too): it tells git
	// where submodules are and how to fetch them.
	KindGitmodules ChangeKind = ".gitmodules"
	// KindDotGit is a path component that is .git on some file system:
	// checked out, it would be a repository's git directory.
	KindDotGit ChangeKind = ".git"
)

// classifyPath says whether a path added or changed in a tree (with its
// new mode) brings a repository to the host: a gitlink, or any component
// that is .gitmodules or .git as git's own fsck rules see them on any
// file system (is_hfs_dotgit, is_ntfs_dotgit, is_hfs_dotgitmodules,
// is_ntfs_dotgitmodules), made stricter where that was simpler: every
// Unicode case fold counts, and a backslash also splits components. at is
// the path up to the component that matched (the whole path for a
// gitlink): one entry for a .git directory, not one per file in it.
func classifyPath(path, mode string) (kind ChangeKind, at string, ok bool) {
	end := 0
	for end < len(path) {
		i := strings.IndexAny(path[end:], "/\\")
		next := len(path)
		if i >= 0 {
			next = end + i
		}
		comp := path[end:next]
		switch {
		case comp == "":
		case dotgit.Is(comp):
			return KindDotGit, path[:next], true
		case dotgit.IsModules(comp):
			return KindGitmodules, path[:next], true
		}
		end = next + 1
	}
	if mode == "160000" {
		return KindGitlink, path, true
	}
	return "", "", false
}
