// Package gitshadow keeps a box from changing what git runs on the host.
//
// A project's git directory decides what the host's git executes
// (core.fsmonitor, hooks, filter drivers, …), and the project is shared
// into the box. So corral never lets the box write it:
//
//  1. Find resolves which host paths hold the repository's git metadata: the
//     project's .git (a directory, or a "gitdir:" file for worktrees and
//     submodules), the git directory such a file names, and its common
//     directory. The qemu wrapper binds each read-only over itself in qemu's
//     private mount namespace (Linux; see core/qemu), and the guest mounts an
//     overlay over them whose upper layer is on the box's own disk (the
//     "shadow", guest/corral-git-shadow.sh), so git in the box works.
//  2. The guard (guard.go) fingerprints what git would execute from the
//     repository when a session starts, and reverts and reports changes made
//     while a box could write them (the opt-out, and macOS where only the
//     guest enforces the read-only share).
//
// Everything under the project is hostile: the box may rewrite it at any
// moment, so files are size-capped and symlinks are resolved, never trusted.
package gitshadow

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/corral-dev/corral/core/untrusted"
)

// MaxGitFile caps a ".git" file or a "commondir" file (a path and a newline).
const MaxGitFile = 4096

// Dirs is where a project's git metadata lives on the host.
type Dirs struct {
	Project string // absolute, symlink-free
	// DotGit is the project's .git entry ("" when the project is not the
	// top of a git work tree); DotGitIsFile says it is a "gitdir:" file.
	DotGit       string
	DotGitIsFile bool
	// GitDir is the resolved git directory, CommonDir its common directory
	// (the same unless GitDir is a linked worktree's).
	GitDir    string
	CommonDir string
}

// IsRepo reports whether the project is the top of a git work tree.
func (d Dirs) IsRepo() bool { return d.DotGit != "" }

// ReadOnly lists the host paths the box must not write, outermost first and
// without paths inside another listed path: binding these read-only covers
// everything git reads from the repository.
func (d Dirs) ReadOnly() []string {
	if !d.IsRepo() {
		return nil
	}
	return outermost([]string{d.DotGit, d.GitDir, d.CommonDir})
}

// Outside lists the git directories outside the project (a worktree's or a
// submodule's): the box sees them only if they are shared read-only.
func (d Dirs) Outside() []string {
	var out []string
	for _, p := range d.ReadOnly() {
		if !within(d.Project, p) {
			out = append(out, p)
		}
	}
	return out
}

// Find resolves the git metadata of project (absolute). A project without
// .git is not an error: Dirs.IsRepo is false.
func Find(project string) (Dirs, error) {
	proj, err := filepath.EvalSymlinks(project)
	if err != nil {
		return Dirs{}, fmt.Errorf("resolving project %s: %w", project, err)
	}
	d := Dirs{Project: proj}
	dotGit := filepath.Join(proj, ".git")
	fi, err := os.Lstat(dotGit)
	if errors.Is(err, os.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return Dirs{}, fmt.Errorf("reading %s: %w", dotGit, err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// Bind mounts follow symlinks: protect what it points to.
		real, err := filepath.EvalSymlinks(dotGit)
		if err != nil {
			return Dirs{}, fmt.Errorf("resolving %s: %w", dotGit, err)
		}
		dotGit = real
		if fi, err = os.Stat(real); err != nil {
			return Dirs{}, fmt.Errorf("reading %s: %w", real, err)
		}
	}
	d.DotGit = dotGit
	switch {
	case fi.IsDir():
		d.GitDir = dotGit
	case fi.Mode().IsRegular():
		d.DotGitIsFile = true
		target, err := readPointer(dotGit, "gitdir:")
		if err != nil {
			return Dirs{}, err
		}
		if d.GitDir, err = resolveDir(filepath.Dir(dotGit), target); err != nil {
			return Dirs{}, fmt.Errorf("%s names %w", dotGit, err)
		}
	default:
		return Dirs{}, fmt.Errorf("%s is neither a directory nor a gitdir file", dotGit)
	}
	d.CommonDir = d.GitDir
	cf := filepath.Join(d.GitDir, "commondir")
	if _, err := os.Lstat(cf); err == nil {
		rel, err := readPointer(cf, "")
		if err != nil {
			return Dirs{}, err
		}
		if d.CommonDir, err = resolveDir(d.GitDir, rel); err != nil {
			return Dirs{}, fmt.Errorf("%s names %w", cf, err)
		}
	}
	return d, nil
}

// readPointer reads a small one-line file ("gitdir: PATH" or "PATH").
func readPointer(path, prefix string) (string, error) {
	// A FIFO or device the box put there is refused, never opened
	// blocking.
	b, err := untrusted.ReadFile(path, MaxGitFile)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	s := strings.TrimRight(string(line), "\r")
	if prefix != "" {
		rest, ok := strings.CutPrefix(s, prefix)
		if !ok {
			return "", fmt.Errorf("reading %s: no %q line", path, prefix)
		}
		s = rest
	}
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsRune(s, 0) {
		return "", fmt.Errorf("reading %s: no path", path)
	}
	return s, nil
}

// resolveDir resolves p (relative to base) to an existing, symlink-free
// directory.
func resolveDir(base, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", fmt.Errorf("git directory %s: %w", p, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("git directory %s: %w", p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("git directory %s: not a directory", p)
	}
	return real, nil
}

// outermost sorts paths, drops empty ones and duplicates, and drops every
// path inside another one.
func outermost(paths []string) []string {
	var ps []string
	for _, p := range paths {
		if p != "" {
			ps = append(ps, filepath.Clean(p))
		}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	var out []string
	for _, p := range ps {
		if !slices.ContainsFunc(out, func(o string) bool { return within(o, p) }) {
			out = append(out, p)
		}
	}
	return out
}

// within reports whether p is dir or inside it (both clean).
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
