package gitshadow

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// Nested is a git repository inside the project's work tree other than
// the project's own: a ".git" directory or "gitdir:" file the box may have
// made. Host git run inside it uses its config and hooks, which the box
// wrote: core.fsmonitor runs on `git status`.
type Nested struct {
	// Dir is the repository's work tree, absolute; Rel the same relative
	// to the project (slash-separated).
	Dir string
	Rel string
	// GitFile says .git is a "gitdir:" file, not a directory.
	GitFile bool
}

// NestedLimits bound FindNested: the project is box-written, so a deep or
// huge tree must not stall a corral command.
type NestedLimits struct {
	MaxEntries int           // entries visited; 0 = 200000
	MaxDepth   int           // directory depth; 0 = 32
	Timeout    time.Duration // 0 = 3s
}

// NestedResult is what FindNested found, and whether it stopped early.
type NestedResult struct {
	Repos []Nested
	// Truncated says a limit was reached: there may be more.
	Truncated bool
}

// FindNested looks for git repositories inside d's work tree other than
// the top-level one, at any depth within the limits, without following
// symbolic links or entering any .git. Paths that are gitlinks
// (submodules) in the host's index are not reported: submodules are the
// user's. It reads the index itself (capped) and runs no git.
func FindNested(ctx context.Context, d Dirs, lim NestedLimits) (NestedResult, error) {
	if lim.MaxEntries <= 0 {
		lim.MaxEntries = 200000
	}
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = 32
	}
	if lim.Timeout <= 0 {
		lim.Timeout = 3 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	var res NestedResult
	links := map[string]bool{}
	if d.IsRepo() {
		var err error
		if links, err = Gitlinks(filepath.Join(d.GitDir, "index")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return res, err
		}
	}
	root, err := os.OpenRoot(d.Project)
	if err != nil {
		return res, err
	}
	defer root.Close()
	visits := 0
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		ents, err := fs.ReadDir(root.FS(), dir)
		if err != nil {
			return nil // unreadable: skipped, like git
		}
		for _, de := range ents {
			if visits++; visits > lim.MaxEntries || ctx.Err() != nil {
				res.Truncated = true
				return errStop
			}
			rel := path.Join(dir, de.Name())
			if de.Name() == ".git" {
				if dir == "." {
					continue // the project's own
				}
				t := de.Type()
				if (t.IsDir() || t.IsRegular()) && !links[dir] {
					res.Repos = append(res.Repos, Nested{Dir: filepath.Join(d.Project, filepath.FromSlash(dir)), Rel: dir, GitFile: t.IsRegular()})
				}
				continue
			}
			if !de.IsDir() { // a symlink is not a directory here: never followed
				continue
			}
			if depth+1 > lim.MaxDepth {
				res.Truncated = true
				continue
			}
			if err := walk(rel, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(".", 0); err != nil && !errors.Is(err, errStop) {
		return res, err
	}
	slices.SortFunc(res.Repos, func(a, b Nested) int { return strings.Compare(a.Rel, b.Rel) })
	return res, nil
}

var errStop = errors.New("stop")

// MaxIndex caps the index Gitlinks reads.
const MaxIndex = 256 << 20

// Gitlinks returns the paths (slash-separated) that the git index at p
// records as gitlinks (mode 160000: submodules). It reads index versions
// 2, 3 and 4, with SHA-1 or SHA-256 object names (told apart by the
// entry layout), regular files only, capped.
func Gitlinks(p string) (map[string]bool, error) {
	b, err := untrusted.ReadFile(p, MaxIndex)
	if err != nil {
		return nil, err
	}
	out, err := parseGitlinks(b, 20)
	if err != nil {
		if out32, err32 := parseGitlinks(b, 32); err32 == nil {
			return out32, nil
		}
		return nil, fmt.Errorf("reading the index %s: %w", p, err)
	}
	return out, nil
}

// parseGitlinks parses an index whose object names are hashLen bytes.
func parseGitlinks(b []byte, hashLen int) (map[string]bool, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return nil, errors.New("not a git index")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return nil, fmt.Errorf("index version %d", version)
	}
	n := binary.BigEndian.Uint32(b[8:12])
	out := map[string]bool{}
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashLen + 2
		if off+fixed > len(b) {
			return nil, errors.New("truncated index entry")
		}
		mode := binary.BigEndian.Uint32(b[off+24 : off+28])
		flags := binary.BigEndian.Uint16(b[off+40+hashLen : off+fixed])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return nil, errors.New("extended flag in a version 2 index")
			}
			off += 2
		}
		if off >= len(b) {
			return nil, errors.New("truncated index entry")
		}
		var name string
		if version == 4 {
			strip, k, ok := varint(b[off:])
			if !ok || strip > len(prev) {
				return nil, errors.New("bad path compression")
			}
			off += k
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errors.New("unterminated path")
			}
			name = prev[:len(prev)-strip] + string(b[off:off+end])
			off += end + 1
		} else {
			end := bytes.IndexByte(b[off:], 0)
			if end < 0 {
				return nil, errors.New("unterminated path")
			}
			name = string(b[off : off+end])
			// NUL padding: the entry is a multiple of 8 bytes long.
			off = start + ((off - start + end + 8) &^ 7)
			if off > len(b) {
				return nil, errors.New("truncated index entry")
			}
		}
		if name == "" || (flags&0xfff != 0xfff && int(flags&0xfff) != len(name)) {
			return nil, errors.New("bad entry name")
		}
		if mode&0o170000 == 0o160000 {
			out[name] = true
		}
		prev = name
	}
	return out, nil
}

// varint decodes git's offset encoding (index version 4).
func varint(b []byte) (int, int, bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	v := int(b[0] & 0x7f)
	i := 1
	for b[i-1]&0x80 != 0 {
		if i >= len(b) || i > 8 {
			return 0, 0, false
		}
		v = ((v + 1) << 7) | int(b[i]&0x7f)
		i++
	}
	return v, i, true
}
