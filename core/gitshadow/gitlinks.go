package gitshadow

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corral-dev/corral/core/untrusted"
)

// Submodules are the other way the host's git enters a repository the box
// could write: `git status` and `git diff` in the project visit every path
// that has a gitlink (mode 160000) in the index, and as soon as that path
// holds a repository (a .git directory, or a "gitdir:" file pointing
// anywhere) a child git runs there with that repository's config, whether
// or not the user ever ran `git submodule init`. So for each gitlink the
// box must never be able to create, change or replace the path's .git:
//
//   - populated (the path's .git exists): the .git entry, and the git
//     directory a gitdir file names, are read-only like the project's own;
//   - empty (no .git: an uninitialized submodule): the whole path is
//     box-private: a directory of the box's own is mounted over it, so the
//     agent may still initialize and build the submodule, but nothing it
//     writes there is visible to the host's git;
//   - anything else at the path (a symbolic link, a file) is refused: git
//     would follow it.
//
// The gitlinks come from the host's index, which lies inside the protected
// git directory: the box cannot add one. Nested submodules are followed
// through each populated submodule's own index (in its git directory).

// Limits of the gitlink walk: the index is host-owned, but a very large
// one is still read with a cap, and nesting is bounded.
const (
	MaxIndexSize    = 1 << 30
	MaxGitlinks     = 1024
	maxGitlinkDepth = 4
	maxIndexEntries = 1 << 24
)

// GitlinkKind says what a gitlink's path holds on the host.
type GitlinkKind int

const (
	// GitlinkPopulated: the path's .git exists (a gitdir file or a
	// directory): it is bound read-only.
	GitlinkPopulated GitlinkKind = iota + 1
	// GitlinkEmpty: no .git at the path (or no path): it becomes
	// box-private.
	GitlinkEmpty
	// GitlinkRefused: the path is a symbolic link or not a directory.
	GitlinkRefused
)

func (k GitlinkKind) String() string {
	switch k {
	case GitlinkPopulated:
		return "populated"
	case GitlinkEmpty:
		return "empty"
	case GitlinkRefused:
		return "refused"
	}
	return fmt.Sprintf("GitlinkKind(%d)", int(k))
}

// Gitlink is one submodule path of the project, as the host sees it.
type Gitlink struct {
	// Path is absolute: the project joined with the index's path.
	Path string
	Kind GitlinkKind
	// DotGit is Path/.git when populated; GitDir is the git directory it
	// names (itself when a directory), "" when it names none that exists.
	DotGit string
	GitDir string
	// Why says, for a refused path, what is wrong.
	Why string
}

// ErrGitlink marks a gitlink path corral refuses to start a box with.
var ErrGitlink = errors.New("submodule path is not a directory")

// Gitlinks lists the project's gitlinks (nested submodules included), each
// classified. The index is read from the git directory (a linked worktree
// has its own). A missing index means no gitlinks.
func (d Dirs) Gitlinks() ([]Gitlink, error) {
	if !d.IsRepo() {
		return nil, nil
	}
	var out []Gitlink
	err := gitlinksIn(d.Project, d.GitDir, 0, &out)
	slices.SortFunc(out, func(a, b Gitlink) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}

func gitlinksIn(workTree, gitDir string, depth int, out *[]Gitlink) error {
	if depth > maxGitlinkDepth {
		return fmt.Errorf("submodules of %s: nested more than %d deep", workTree, maxGitlinkDepth)
	}
	paths, err := IndexGitlinks(filepath.Join(gitDir, "index"))
	if err != nil {
		return err
	}
	for _, rel := range paths {
		if len(*out) >= MaxGitlinks {
			return fmt.Errorf("submodules of %s: more than %d", workTree, MaxGitlinks)
		}
		g := classifyGitlink(workTree, rel)
		*out = append(*out, g)
		if g.Kind == GitlinkPopulated && g.GitDir != "" {
			if err := gitlinksIn(g.Path, g.GitDir, depth+1, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// classify looks at one gitlink path without following a link the box may
// have planted: every component below the work tree is checked with Lstat.
func classifyGitlink(workTree, rel string) Gitlink {
	p := filepath.Join(workTree, filepath.FromSlash(rel))
	g := Gitlink{Path: p}
	// A link in a parent would send the bind elsewhere.
	cur := workTree
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			g.Kind = GitlinkEmpty
			return g
		}
		if err != nil {
			g.Kind, g.Why = GitlinkRefused, err.Error()
			return g
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			g.Kind, g.Why = GitlinkRefused, cur+" is a symbolic link"
			return g
		}
		if !fi.IsDir() {
			what := "a file"
			if i < len(parts)-1 {
				what = "a file inside the path"
			}
			g.Kind, g.Why = GitlinkRefused, cur+" is "+what+", not a directory"
			return g
		}
	}
	dotGit := filepath.Join(p, ".git")
	fi, err := os.Lstat(dotGit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		g.Kind = GitlinkEmpty
		return g
	case err != nil:
		g.Kind, g.Why = GitlinkRefused, err.Error()
		return g
	case fi.Mode()&fs.ModeSymlink != 0:
		g.Kind, g.Why = GitlinkRefused, dotGit+" is a symbolic link"
		return g
	case fi.IsDir():
		g.Kind, g.DotGit, g.GitDir = GitlinkPopulated, dotGit, dotGit
		return g
	case fi.Mode().IsRegular():
		g.Kind, g.DotGit = GitlinkPopulated, dotGit
		if target, err := readPointer(dotGit, "gitdir:"); err == nil {
			if dir, err := resolveDir(p, target); err == nil {
				g.GitDir = dir
			}
		}
		return g
	}
	g.Kind, g.Why = GitlinkRefused, dotGit+" is neither a directory nor a gitdir file"
	return g
}

// IndexGitlinks reads a git index file (versions 2, 3 and 4, SHA-1 or
// SHA-256 object names, told apart by the entry layout: each entry's
// flags carry its name's length) and returns the paths of its gitlink
// entries (mode 160000), slash-separated and relative to the work tree,
// each once. A missing file is no gitlinks. The file is read through
// core/untrusted (regular, capped, non-blocking).
func IndexGitlinks(index string) ([]string, error) {
	b, err := untrusted.ReadFile(index, MaxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the index: %w", err)
	}
	links, err := ParseIndexGitlinks(b, false)
	if err != nil {
		var err32 error
		if links, err32 = ParseIndexGitlinks(b, true); err32 != nil {
			return nil, fmt.Errorf("reading the index %s: %w", index, err)
		}
	}
	return links, nil
}

const gitlinkMode = 0o160000

// ParseIndexGitlinks parses the entries of an index file (git's
// gitformat-index: "DIRC", version, count, then the entries) and returns
// the gitlink paths. Extensions and the trailing checksum are not read. A
// path that is not a clean relative path (absolute, "..", ".git", empty
// components) is an error: git itself refuses such entries.
func ParseIndexGitlinks(b []byte, sha256 bool) ([]string, error) {
	hashLen := 20
	if sha256 {
		hashLen = 32
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("not an index file (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d is not supported", version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if n > maxIndexEntries {
		return nil, fmt.Errorf("index declares %d entries", n)
	}
	var out []string
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashLen + 2
		if len(b)-off < fixed {
			return nil, fmt.Errorf("entry %d is truncated", i)
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, fmt.Errorf("entry %d has extended flags in a version %d index", i, version)
			}
			if len(b)-off < 2 {
				return nil, fmt.Errorf("entry %d is truncated", i)
			}
			off += 2
		}
		var name string
		if version == 4 {
			strip, k := indexVarint(b[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, fmt.Errorf("entry %d has a bad path prefix", i)
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, fmt.Errorf("entry %d has an unterminated path", i)
			}
			name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, fmt.Errorf("entry %d has an unterminated path", i)
			}
			name = string(b[off : off+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			size := (off - start + end + 8) &^ 7
			if start+size > len(b) {
				return nil, fmt.Errorf("entry %d is truncated", i)
			}
			off = start + size
		}
		if name == "" || (flags&0xfff != 0xfff && int(flags&0xfff) != len(name)) {
			return nil, fmt.Errorf("entry %d: its name does not match its recorded length", i)
		}
		prev = name
		if mode&0o170000 != gitlinkMode {
			continue
		}
		if !cleanIndexPath(name) {
			return nil, fmt.Errorf("entry %d: gitlink path %q is not a clean relative path", i, name)
		}
		if len(out) == 0 || out[len(out)-1] != name { // stages of one path are adjacent
			out = append(out, name)
		}
	}
	return out, nil
}

// Outermost sorts paths, drops duplicates and every path inside another
// one: binding these covers all of them.
func Outermost(paths []string) []string { return outermost(paths) }

// indexVarint decodes git's offset varint (varint.c): it returns the value
// and the bytes used, or k <= 0 when it is truncated or overflows.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	val := uint64(c & 127)
	k := 1
	for c&128 != 0 {
		if k >= len(b) || k > 9 {
			return 0, -1
		}
		val++
		if val > (^uint64(0))>>7 {
			return 0, -1
		}
		c = b[k]
		val = val<<7 + uint64(c&127)
		k++
	}
	return val, k
}

// cleanIndexPath is git's own rule for a path in the index (verify_path,
// simplified): relative, slash-separated, no empty, "." or ".."
// component, no ".git" component in any case, no NUL or backslash.
func cleanIndexPath(p string) bool {
	if p == "" || strings.ContainsAny(p, "\x00\\") {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return false
		}
	}
	return true
}
