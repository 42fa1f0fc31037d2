package gitshadow

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
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
// each once. A split index (core.splitIndex: a "link" extension naming
// sharedindex.<hash> beside it) is merged with its shared index as git
// does. A missing file is no gitlinks. Files are read through
// core/untrusted (regular, capped, non-blocking).
func IndexGitlinks(index string) ([]string, error) {
	b, err := untrusted.ReadFile(index, MaxIndexSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the index: %w", err)
	}
	links, err := indexGitlinks(b, false, filepath.Dir(index))
	if err != nil {
		var err32 error
		if links, err32 = indexGitlinks(b, true, filepath.Dir(index)); err32 != nil {
			// The format whose entries parsed is the one to report.
			if errors.Is(err32, errSplitIndex) && !errors.Is(err, errSplitIndex) {
				err = err32
			}
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
	entries, _, err := parseIndex(b, sha256, false)
	if err != nil {
		return nil, err
	}
	return gitlinksOf(entries)
}

// indexEntry is what the gitlink walk needs of an index entry.
type indexEntry struct {
	name string
	mode uint32
}

func gitlinksOf(entries []indexEntry) ([]string, error) {
	var out []string
	for i, e := range entries {
		if e.mode&0o170000 != gitlinkMode {
			continue
		}
		if !cleanIndexPath(e.name) {
			return nil, fmt.Errorf("entry %d: gitlink path %q is not a clean relative path", i, e.name)
		}
		if len(out) == 0 || out[len(out)-1] != e.name { // stages of one path are adjacent
			out = append(out, e.name)
		}
	}
	return out, nil
}

// indexGitlinks is ParseIndexGitlinks for a file that may be a split
// index: its "link" extension names the shared index in dir.
func indexGitlinks(b []byte, sha256 bool, dir string) ([]string, error) {
	entries, rest, err := parseIndex(b, sha256, true)
	if err != nil {
		return nil, err
	}
	hashLen := 20
	if sha256 {
		hashLen = 32
	}
	link, err := indexExtension(rest, hashLen, "link")
	if err != nil {
		return nil, err
	}
	if link == nil {
		for i, e := range entries {
			if e.name == "" {
				return nil, fmt.Errorf("entry %d has no name", i)
			}
		}
		return gitlinksOf(entries)
	}
	merged, err := mergeSplitIndex(entries, link, hashLen, sha256, dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errSplitIndex, err)
	}
	links, err := gitlinksOf(merged)
	if err != nil {
		return nil, err
	}
	slices.Sort(links)
	return slices.Compact(links), nil
}

// errSplitIndex marks a split index corral could not merge.
var errSplitIndex = errors.New("the index is split (core.splitIndex)")

// indexExtension finds extension sig among those after the entries (each
// a 4-byte signature, a 4-byte size and the data; the file's checksum of
// hashLen bytes ends it) and returns its data, or nil.
func indexExtension(rest []byte, hashLen int, sig string) ([]byte, error) {
	for len(rest) > hashLen {
		if len(rest) < 8+hashLen {
			return nil, errors.New("a truncated index extension")
		}
		size := binary.BigEndian.Uint32(rest[4:8])
		if uint64(size) > uint64(len(rest)-8-hashLen) {
			return nil, fmt.Errorf("index extension %q is truncated", rest[:4])
		}
		if string(rest[:4]) == sig {
			return rest[8 : 8+size], nil
		}
		rest = rest[8+size:]
	}
	return nil, nil
}

// mergeSplitIndex applies a split index's entries to its shared index as
// git's merge_base_index does: the link extension holds the shared
// index's object name, then two EWAH bitmaps over the shared entries:
// deleted, and replaced (each replaced in order by the next nameless entry
// of the split index, which keeps the shared entry's name); the split
// index's other entries are added.
func mergeSplitIndex(entries []indexEntry, link []byte, hashLen int, sha256 bool, dir string) ([]indexEntry, error) {
	if len(link) < hashLen {
		return nil, errors.New("its link extension is truncated")
	}
	shared := filepath.Join(dir, "sharedindex."+hex.EncodeToString(link[:hashLen]))
	b, err := untrusted.ReadFile(shared, MaxIndexSize)
	if err != nil {
		return nil, fmt.Errorf("reading its shared index: %w", err)
	}
	base, _, err := parseIndex(b, sha256, false)
	if err != nil {
		return nil, fmt.Errorf("reading its shared index %s: %w", shared, err)
	}
	var deleted, replaced []int
	if rest := link[hashLen:]; len(rest) > 0 {
		var n int
		if deleted, n, err = ewahBits(rest, len(base)); err != nil {
			return nil, fmt.Errorf("its delete bitmap: %w", err)
		}
		if replaced, _, err = ewahBits(rest[n:], len(base)); err != nil {
			return nil, fmt.Errorf("its replace bitmap: %w", err)
		}
	}
	r := 0
	for _, p := range replaced {
		if r >= len(entries) || entries[r].name != "" {
			return nil, errors.New("a replaced entry has no nameless entry in the split index")
		}
		base[p].mode = entries[r].mode
		r++
	}
	gone := make(map[int]bool, len(deleted))
	for _, p := range deleted {
		gone[p] = true
	}
	out := make([]indexEntry, 0, len(base)+len(entries)-r)
	for i, e := range base {
		if !gone[i] {
			out = append(out, e)
		}
	}
	for _, e := range entries[r:] {
		if e.name == "" {
			return nil, errors.New("an added entry has no name")
		}
		out = append(out, e)
	}
	return out, nil
}

// ewahBits decodes one of git's EWAH bitmaps (ewah/ewah_io.c: the bit
// count, the number of 64-bit words, the words, the position of the last
// run-length word) and returns the set bits, each below limit, and the
// bytes read.
func ewahBits(b []byte, limit int) ([]int, int, error) {
	if len(b) < 8 {
		return nil, 0, errors.New("truncated")
	}
	words := binary.BigEndian.Uint32(b[4:8])
	need := 8 + 8*uint64(words) + 4
	if uint64(len(b)) < need {
		return nil, 0, errors.New("truncated")
	}
	word := func(i uint32) uint64 { return binary.BigEndian.Uint64(b[8+8*i:]) }
	var out []int
	pos := uint64(0)
	for i := uint32(0); i < words; {
		rlw := word(i)
		i++
		run, lits := (rlw>>1)&0xffffffff, rlw>>33
		if rlw&1 != 0 {
			if pos+run*64 > uint64(limit)+64 {
				return nil, 0, fmt.Errorf("a run of set bits past the %d entries", limit)
			}
			for k := uint64(0); k < run*64; k++ {
				out = append(out, int(pos+k))
			}
		}
		pos += run * 64
		for j := uint64(0); j < lits && i < words; j++ {
			w := word(i)
			i++
			for bit := uint64(0); bit < 64; bit++ {
				if w>>bit&1 != 0 {
					out = append(out, int(pos+bit))
				}
			}
			pos += 64
		}
	}
	for _, p := range out {
		if p >= limit {
			return nil, 0, fmt.Errorf("bit %d past the %d entries", p, limit)
		}
	}
	return out, int(need), nil
}

// parseIndex reads the entries of an index file and returns them with
// the bytes after them (the extensions and the checksum). allowEmpty
// admits the nameless entries of a split index.
func parseIndex(b []byte, sha256, allowEmpty bool) ([]indexEntry, []byte, error) {
	hashLen := 20
	if sha256 {
		hashLen = 32
	}
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, nil, errors.New("not an index file (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, nil, fmt.Errorf("index version %d is not supported", version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	if n > maxIndexEntries {
		return nil, nil, fmt.Errorf("index declares %d entries", n)
	}
	var out []indexEntry
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashLen + 2
		if len(b)-off < fixed {
			return nil, nil, fmt.Errorf("entry %d is truncated", i)
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, nil, fmt.Errorf("entry %d has extended flags in a version %d index", i, version)
			}
			if len(b)-off < 2 {
				return nil, nil, fmt.Errorf("entry %d is truncated", i)
			}
			off += 2
		}
		var name string
		if version == 4 {
			strip, k := indexVarint(b[off:])
			if k <= 0 || strip > uint64(len(prev)) {
				return nil, nil, fmt.Errorf("entry %d has a bad path prefix", i)
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, nil, fmt.Errorf("entry %d has an unterminated path", i)
			}
			name = prev[:len(prev)-int(strip)] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, nil, fmt.Errorf("entry %d has an unterminated path", i)
			}
			name = string(b[off : off+end])
			// Entries are padded with 1-8 NULs to a multiple of 8 bytes.
			size := (off - start + end + 8) &^ 7
			if start+size > len(b) {
				return nil, nil, fmt.Errorf("entry %d is truncated", i)
			}
			off = start + size
		}
		if (name == "" && !allowEmpty) || (flags&0xfff != 0xfff && int(flags&0xfff) != len(name)) {
			return nil, nil, fmt.Errorf("entry %d: its name does not match its recorded length", i)
		}
		prev = name
		out = append(out, indexEntry{name: name, mode: mode})
	}
	return out, b[off:], nil
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
