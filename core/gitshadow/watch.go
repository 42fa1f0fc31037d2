package gitshadow

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corral-dev/corral/core/untrusted"
)

// Mode says which changes to the recorded git directories the guard
// reverts. box.GitGuardMode decides it for a box.
type Mode string

const (
	// Frozen: the box was never meant to write the git directories (the
	// guest enforces the shadow, and guest root could undo it): every
	// change to the watched set is reverted, HEAD, the refs, packed-refs
	// and the index included.
	Frozen Mode = "frozen"
	// Commits: the box may commit into the host repository (git_shadow =
	// false): objects, refs other than refs/replace, HEAD, the index and
	// the logs may change. What makes git run something or substitute
	// content is still reverted: config and what it includes, hooks,
	// info/ (grafts, attributes, exclude), refs/replace (loose or in
	// packed-refs), alternates, shallow, the commondir and gitdir
	// pointers, and the same in every module and worktree git directory.
	Commits Mode = "commits"
)

// Valid reports whether m is a known mode.
func (m Mode) Valid() bool { return m == Frozen || m == Commits }

// QuarantineDir is where Revert moves what the box added, at the top of
// each recorded git directory (a rename never leaves the directory). Git
// reads nothing there; the guard watches nothing there.
const QuarantineDir = "corral-quarantine"

// class is what a path inside a git directory is to the guard.
type class int

const (
	// ignored: never watched (objects, logs, LFS storage, lock files, the
	// quarantine).
	ignored class = iota
	// state: what a commit, fetch or merge writes (refs, HEAD, the index):
	// watched in Frozen mode only.
	state
	// packed: packed-refs: whole in Frozen mode, its refs/replace lines in
	// Commits mode.
	packed
	// execs: always watched. Anything not known to be state is this.
	execs
)

// execDirs are directory names that hold what git runs or obeys (hooks,
// info/grafts, refs/replace, objects/info/alternates, …). At any depth:
// module names may contain slashes, so modules/a/refs/heads/x may be a
// module's git directory and its hooks/ a module's hooks. A branch with
// such a component is reverted in Commits mode: deny on ambiguity.
var execDirs = map[string]bool{"hooks": true, "info": true, "replace": true}

// execFiles are file names that decide what git runs or where it reads,
// at any depth, for the same reason.
var execFiles = map[string]bool{
	"config": true, "config.worktree": true, "commondir": true, "gitdir": true,
	"alternates": true, "http-alternates": true, "grafts": true, "shallow": true,
}

// stateFiles are the files at the top of a git directory that ordinary
// commits, merges, rebases' bookkeeping and fetches write.
var stateFiles = map[string]bool{
	"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true, "MERGE_MSG": true,
	"MERGE_MODE": true, "MERGE_AUTOSTASH": true, "AUTO_MERGE": true, "CHERRY_PICK_HEAD": true,
	"REVERT_HEAD": true, "REBASE_HEAD": true, "BISECT_LOG": true, "BISECT_START": true,
	"BISECT_TERMS": true, "BISECT_EXPECTED_REV": true, "BISECT_ANCESTORS_OK": true,
	"BISECT_NAMES": true, "BISECT_HEAD": true, "COMMIT_EDITMSG": true, "SQUASH_MSG": true,
	"TAG_EDITMSG": true, "NOTES_MERGE_PARTIAL": true, "NOTES_MERGE_REF": true, "index": true,
	"description": true, "gc.log": true, "gc.pid": true, "gitk.cache": true,
}

// ignoredDirs are the directories at the top of a git directory that are
// never watched: objects are named by their hash (objects/info, holding
// alternates and the commit-graph, is an exec directory), logs are only
// history, lfs/ holds large content.
var ignoredDirs = map[string]bool{"objects": true, "logs": true, "lfs": true}

// classify says what the path rel (slash-separated, relative to a
// recorded git directory) is. isDir matters for the last component only.
func classify(rel string, isDir bool) class {
	comps := strings.Split(rel, "/")
	last := comps[len(comps)-1]
	if comps[0] == QuarantineDir || strings.HasSuffix(last, ".lock") {
		return ignored
	}
	for i, c := range comps {
		if (i < len(comps)-1 || isDir) && execDirs[c] {
			return execs
		}
	}
	if !isDir && execFiles[last] {
		return execs
	}
	// The rest of the path, at some git directory's top: the recorded one,
	// a worktree's (worktrees/<name>) or a module's (modules/<name…>).
	for i := range comps {
		if !gitDirPrefix(comps[:i]) {
			continue
		}
		tail := comps[i:]
		switch {
		case ignoredDirs[tail[0]]:
			return ignored
		case tail[0] == "refs":
			return state
		case len(tail) == 1 && tail[0] == "packed-refs" && !isDir:
			return packed
		case len(tail) == 1 && stateFiles[tail[0]] && !isDir:
			return state
		}
	}
	return execs
}

// gitDirPrefix reports whether p may lead from a git directory to a
// nested one: nothing, worktrees/<name>, or modules/<one or more names>.
func gitDirPrefix(p []string) bool {
	switch {
	case len(p) == 0:
		return true
	case p[0] == "worktrees":
		return len(p) == 2
	case p[0] == "modules":
		return len(p) >= 2
	}
	return false
}

// watchedIn reports whether a path of class c is watched in mode m.
func watchedIn(c class, m Mode) bool {
	switch c {
	case execs, packed:
		return true
	case state:
		return m != Commits
	}
	return false
}

// probeNames are what a directory the guard does not walk (objects, logs)
// is looked into for: a module git directory can hide there (a module
// named "x/objects").
var probeNames = []string{"config", "hooks", "commondir"}

// Limits of what the guard reads: a repository the box could write is
// hostile, so a flood of files or a huge file is refused, not read.
const (
	MaxWatchedFiles = 1 << 15
	MaxWatchedSize  = 64 << 20 // the index of a large repository
	maxVisits       = 1 << 18
	maxIncludeDepth = 10
	maxIncludes     = 64
)

// scanner reads one recorded git directory through its Root: nothing it
// opens, reads or follows is outside the directory.
type scanner struct {
	root     *os.Root
	out      map[string]Entry // by slash-separated path relative to root
	configs  map[string][]byte
	visits   int
	maxFiles int
	count    *int // watched entries across all roots
	blob     func(sum string, b []byte) error
}

func (s *scanner) add(rel string) error {
	if _, ok := s.out[rel]; ok {
		return nil
	}
	if *s.count >= s.maxFiles {
		return fmt.Errorf("more than %d files to watch", s.maxFiles)
	}
	*s.count++
	e, b, err := readEntry(s.root, rel)
	if err != nil {
		return err
	}
	if b != nil {
		if base := path.Base(rel); base == "config" || base == "config.worktree" || s.configs[rel] != nil {
			s.configs[rel] = b
		}
		if s.blob != nil {
			if err := s.blob(e.SHA256, b); err != nil {
				return err
			}
		}
	}
	s.out[rel] = e
	return nil
}

// readEntry reads the state of rel without following a symbolic link or
// opening anything but a regular file (non-blocking, capped). It returns
// the content of a regular file.
func readEntry(root *os.Root, rel string) (Entry, []byte, error) {
	// A parent that is no longer a real directory (a symlink the box put
	// there) is the change; what was under it is not there.
	for d := path.Dir(rel); d != "."; d = path.Dir(d) {
		if fi, err := root.Lstat(filepath.FromSlash(d)); err != nil || !fi.IsDir() {
			if err == nil || errors.Is(err, fs.ErrNotExist) {
				return Entry{Absent: true}, nil, nil
			}
			return Entry{}, nil, err
		}
	}
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if errors.Is(err, fs.ErrNotExist) {
		return Entry{Absent: true}, nil, nil
	}
	if err != nil {
		return Entry{}, nil, err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := root.Readlink(filepath.FromSlash(rel))
		if err != nil {
			return Entry{}, nil, err
		}
		return Entry{Mode: fi.Mode(), Link: t}, nil, nil
	case fi.Mode().IsRegular():
		b, err := untrusted.ReadFileIn(root, filepath.FromSlash(rel), MaxWatchedSize)
		if errors.Is(err, untrusted.ErrTooLarge) || errors.Is(err, untrusted.ErrNotRegular) {
			// Not read: what it is now differs from any recorded copy.
			return Entry{Mode: fi.Mode(), Unread: true}, nil, nil
		}
		if err != nil {
			return Entry{}, nil, fmt.Errorf("%s: %w", rel, err)
		}
		sum := sha256.Sum256(b)
		e := Entry{Mode: fi.Mode(), SHA256: hex.EncodeToString(sum[:])}
		if path.Base(rel) == "packed-refs" {
			e.Replace = replaceDigest(b)
		}
		return e, b, nil
	}
	// Directories, FIFOs, devices, sockets: the type and permissions.
	return Entry{Mode: fi.Mode()}, nil, nil
}

// walk visits the tree under dir (slash-separated, "." for the top),
// without following symbolic links, and adds what watch says is watched.
// An ignored directory (objects, logs) is listed but its ignored
// subdirectories (objects/ab, logs/refs) are not walked unless they may
// be a git directory of their own (probe); shallow says dir is such a
// listing. The quarantine and lock directories are never entered.
func (s *scanner) walk(dir string, watch func(rel string, isDir bool) bool, shallow bool) error {
	ents, err := fs.ReadDir(s.root.FS(), dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) && dir != "." {
			return nil
		}
		return err
	}
	for _, de := range ents {
		s.visits++
		if s.visits > maxVisits {
			return fmt.Errorf("more than %d entries in the git directory", maxVisits)
		}
		rel := path.Join(dir, de.Name())
		isDir := de.Type().IsDir() // a symlink is not: never descended
		if watch(rel, isDir) {
			if err := s.add(rel); err != nil {
				return err
			}
		}
		if !isDir || rel == QuarantineDir || strings.HasSuffix(rel, ".lock") {
			continue
		}
		sub := false
		if classify(rel, true) == ignored && !s.probe(rel) {
			if shallow {
				continue
			}
			sub = true
		}
		if err := s.walk(rel, watch, sub); err != nil {
			return err
		}
	}
	return nil
}

// probe reports whether an ignored directory may be a git directory of
// its own (a module named "x/objects"), so it must be walked whole.
func (s *scanner) probe(dir string) bool {
	for _, n := range probeNames {
		if _, err := s.root.Lstat(filepath.FromSlash(path.Join(dir, n))); err == nil {
			return true
		}
	}
	return false
}

// replaceDigest hashes the refs/replace records of a packed-refs file
// (in name order, with their peeled lines): what Commits mode compares.
func replaceDigest(b []byte) string {
	_, recs := packedRecords(b)
	var lines []string
	for _, r := range recs {
		if strings.HasPrefix(recordRef(r), "refs/replace/") {
			lines = append(lines, r[0]+"\n"+r[1])
		}
	}
	slices.Sort(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// packedRecords splits a packed-refs file into its header lines and its
// records (a ref line and the peeled "^" line after it, if any).
func packedRecords(b []byte) (header []string, recs [][2]string) {
	for line := range strings.SplitSeq(string(b), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"):
			header = append(header, line)
		case strings.HasPrefix(line, "^") && len(recs) > 0:
			recs[len(recs)-1][1] = line
		default:
			recs = append(recs, [2]string{line, ""})
		}
	}
	return header, recs
}

func recordRef(r [2]string) string {
	_, ref, _ := strings.Cut(r[0], " ")
	return strings.TrimSpace(ref)
}

// withReplaceRefs returns cur (a packed-refs file) with its refs/replace
// records replaced by those of recorded, sorted by ref name as git
// writes them.
func withReplaceRefs(cur, recorded []byte) []byte {
	header, recs := packedRecords(cur)
	recs = slices.DeleteFunc(recs, func(r [2]string) bool { return strings.HasPrefix(recordRef(r), "refs/replace/") })
	_, old := packedRecords(recorded)
	for _, r := range old {
		if strings.HasPrefix(recordRef(r), "refs/replace/") {
			recs = append(recs, r)
		}
	}
	slices.SortStableFunc(recs, func(a, b [2]string) int { return strings.Compare(recordRef(a), recordRef(b)) })
	var out strings.Builder
	for _, h := range header {
		out.WriteString(h + "\n")
	}
	for _, r := range recs {
		out.WriteString(r[0] + "\n")
		if r[1] != "" {
			out.WriteString(r[1] + "\n")
		}
	}
	return []byte(out.String())
}

// includes returns the paths a git config file includes (include.path and
// includeIf.<cond>.path, whatever the condition), as written: the caller
// decides what they name. A lenient reading: it only has to find the
// includes git would follow in a config file the guard recorded.
func includes(b []byte) []string {
	var out []string
	inInclude := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), MaxWatchedSize)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			end := strings.Index(line, "]")
			if end < 0 {
				inInclude = false
				continue
			}
			sec := strings.ToLower(strings.TrimSpace(line[1:end]))
			name, _, _ := strings.Cut(sec, " ")
			name, _, _ = strings.Cut(name, ".")
			name = strings.TrimRight(name, `"`)
			inInclude = name == "include" || name == "includeif"
			line = strings.TrimSpace(line[end+1:])
			if line == "" {
				continue
			}
		}
		if !inInclude {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.TrimSpace(v)
		if i := strings.IndexAny(v, "#;"); i >= 0 && !strings.HasPrefix(v, `"`) {
			v = strings.TrimSpace(v[:i])
		}
		v = strings.Trim(v, `"`)
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// includeTarget resolves an include path v written in the config file at
// rel (relative to the git directory at rootPath) to a path relative to
// that git directory. ok is false when it names anything outside it
// ("~/…", an absolute path elsewhere, "../…"): such a path is never
// watched, opened or moved.
func includeTarget(rootPath, rel, v string) (string, bool) {
	if strings.HasPrefix(v, "~") || strings.ContainsRune(v, 0) {
		return "", false
	}
	var r string
	if filepath.IsAbs(v) {
		var err error
		if r, err = filepath.Rel(rootPath, filepath.Clean(v)); err != nil {
			return "", false
		}
		r = filepath.ToSlash(r)
	} else {
		r = path.Join(path.Dir(rel), filepath.ToSlash(v))
	}
	if !filepath.IsLocal(filepath.FromSlash(r)) || r == "." {
		return "", false
	}
	return r, true
}

// followIncludes adds every file the recorded configs include inside the
// git directory, transitively (bounded), and returns the include paths
// that lead outside it, as written.
func (s *scanner) followIncludes(rootPath string) ([]string, error) {
	var outside []string
	seen := map[string]bool{}
	n := 0
	queue := slices.Sorted(mapKeys(s.configs))
	for depth := 0; depth < maxIncludeDepth && len(queue) > 0; depth++ {
		var next []string
		for _, cfg := range queue {
			if seen[cfg] {
				continue
			}
			seen[cfg] = true
			for _, v := range includes(s.configs[cfg]) {
				t, ok := includeTarget(rootPath, cfg, v)
				if !ok {
					outside = append(outside, v)
					continue
				}
				if n++; n > maxIncludes {
					return outside, fmt.Errorf("more than %d config includes", maxIncludes)
				}
				if s.configs[t] == nil {
					s.configs[t] = []byte{} // marks t as a config for add
				}
				if _, ok := s.out[t]; ok { // re-read as a config
					delete(s.out, t)
					*s.count--
				}
				if err := s.add(t); err != nil {
					return outside, err
				}
				next = append(next, t)
			}
		}
		queue = next
	}
	return outside, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
