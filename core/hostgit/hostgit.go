// Package hostgit runs git on the host against a project's repository
// when a box's work comes in (`corral pull`) or goes out (the bundle a
// source = "clone" box starts from), so that nothing a box wrote is
// executed or configured on the host.
//
// Every git process gets the same hardening (Repo.command):
//
//   - GIT_DIR is the repository's git directory, found by Open without
//     running git; no other GIT_* variable of the caller passes.
//   - No system or global config (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL):
//     only the repository's own config, which the git shadow keeps
//     host-owned, plus the -c overrides below, which win over it.
//   - Hooks off (core.hooksPath=/dev/null: fetch runs reference-transaction
//     hooks), fsmonitor off, no automatic gc or maintenance, no pager or
//     prompt, every transport but "file" (bundles) refused, and every
//     incoming object checked (transfer.fsckObjects).
//
// What a box sends is a git bundle, an inert file: ReceiveBundle caps and
// checks its header, ScanPack its pack (object count, declared sizes,
// delta results) before git reads it, and Fetch indexes it into a
// quarantine under memory and time limits (Limits), refuses commits that
// would bring a repository to the host (a gitlink, .gitmodules or .git:
// inspect.go) unless the user allows submodules, and only then moves the
// objects in and sets refs/remotes/corral/<box>/* from refs/heads/*.
//
// Between two corrals over ssh (a project sent to a remote host, a remote
// box's commits brought back) branches travel as a branch stream
// (stream.go): a branch list and a bundle, taken by the same Fetch.
package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/corral-dev/corral/core/gitshadow"
)

// ErrNotRepository means the project is not a git repository.
var ErrNotRepository = errors.New("not a git repository")

// Repo is a repository on the host.
type Repo struct {
	// GitDir is the absolute git directory (for a worktree or submodule,
	// the target of its .git file).
	GitDir string
	// WorkTree is the project directory.
	WorkTree string
	// env is added to every git process's fixed environment (a
	// quarantine's object directories).
	env []string
}

// Open finds the git directory of projectDir without running git, by
// core/gitshadow's rule (a .git directory, or a "gitdir:" file for
// worktrees and submodules; size-capped, links resolved).
func Open(projectDir string) (Repo, error) {
	d, err := gitshadow.Find(projectDir)
	if err != nil {
		return Repo{}, fmt.Errorf("opening the repository of %s: %w", projectDir, err)
	}
	if !d.IsRepo() {
		return Repo{}, fmt.Errorf("%w: %s (no .git)", ErrNotRepository, projectDir)
	}
	if st, err := os.Stat(filepath.Join(d.GitDir, "HEAD")); err != nil || !st.Mode().IsRegular() {
		return Repo{}, fmt.Errorf("%w: %s has no HEAD", ErrNotRepository, d.GitDir)
	}
	return Repo{GitDir: d.GitDir, WorkTree: d.Project}, nil
}

// hardening are the -c settings every git process gets; they override the
// repository's config.
var hardening = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.pager=cat",
	"gc.auto=0",
	"maintenance.auto=false",
	"fetch.recurseSubmodules=false",
	"diff.ignoreSubmodules=none", // a tree diff must show every gitlink change
	"fetch.writeCommitGraph=false",
	"transfer.fsckObjects=true",
	"fetch.fsckObjects=true",
	"receive.fsckObjects=true",
	"protocol.allow=never",
	"protocol.file.allow=always", // a bundle is read through the file transport
	"credential.helper=",
	"core.protectHFS=true", // a checkout (CheckOut) refuses every spelling of .git
	"core.protectNTFS=true",
}

// command builds a hardened git process for the repository.
func (r Repo) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := []string{}
	for _, h := range hardening {
		argv = append(argv, "-c", h)
	}
	argv = append(argv, args...)
	cmd := exec.CommandContext(ctx, "git", argv...)
	cmd.Env = append(env(os.Environ(), r.GitDir), r.env...)
	cmd.Dir = r.GitDir
	return cmd
}

// env keeps the caller's environment minus every GIT_* variable, and adds
// the fixed ones.
func env(base []string, gitDir string) []string {
	out := make([]string, 0, len(base)+8)
	for _, kv := range base {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out,
		"GIT_DIR="+gitDir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=/bin/false",
		"GIT_PAGER=cat",
		"GIT_NO_REPLACE_OBJECTS=1",
		"LC_ALL=C",
	)
}

// run runs git and returns stdout; an error carries the first stderr line.
func (r Repo) run(ctx context.Context, args ...string) ([]byte, error) {
	return r.runIn(ctx, "", args...)
}

// runIn is run with stdin.
func (r Repo) runIn(ctx context.Context, stdin string, args ...string) ([]byte, error) {
	cmd := r.command(ctx, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return out, gitError(args[0], err, stderr.String())
	}
	return out, nil
}

// gitError is a failed git's error: its fatal line, or else its first
// stderr line, made safe to print.
func gitError(op string, err error, stderr string) error {
	msg := strings.TrimSpace(stderr)
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 && strings.HasPrefix(msg[i+1:], "fatal:") {
		// The fatal line, after the first "error:" line that says why
		// (index-pack's "fsck error in packed object" says nothing).
		fatal := msg[i+1:]
		if j := strings.Index(msg, "error: "); j >= 0 && j < i {
			e, _, _ := strings.Cut(msg[j:], "\n")
			fatal = SafeText(e, 200) + "; " + fatal
		}
		msg = fatal
	} else {
		msg, _, _ = strings.Cut(msg, "\n")
	}
	return fmt.Errorf("git %s: %w: %s", op, err, SafeText(msg, 400))
}

// capBuffer keeps the first max bytes written to it and drops the rest.
type capBuffer struct {
	bytes.Buffer
	max int
}

func (c *capBuffer) Write(p []byte) (int, error) {
	if left := c.max - c.Len(); left > 0 {
		c.Buffer.Write(p[:min(len(p), left)])
	}
	return len(p), nil
}

// CreateBundle writes a bundle of the repository's branches and tags (and
// HEAD, so a clone checks out the current branch) to path. ok is false for
// a repository without any commit.
func (r Repo) CreateBundle(ctx context.Context, path string) (ok bool, err error) {
	heads, err := r.run(ctx, "for-each-ref", "--count=1", "--format=%(objectname)", "refs/heads/")
	if err != nil {
		return false, fmt.Errorf("listing branches of %s: %w", r.WorkTree, err)
	}
	if len(bytes.TrimSpace(heads)) == 0 {
		return false, nil
	}
	revs := []string{"--branches", "--tags"}
	if _, err := r.run(ctx, "rev-parse", "--verify", "--quiet", "HEAD"); err == nil {
		revs = append([]string{"HEAD"}, revs...)
	}
	if _, err := r.run(ctx, append([]string{"bundle", "create", "--quiet", path}, revs...)...); err != nil {
		return false, fmt.Errorf("bundling %s: %w", r.WorkTree, err)
	}
	return true, nil
}

// Tips returns the object names of refs under prefix (e.g. "refs/heads/"),
// keyed by full ref name.
func (r Repo) Tips(ctx context.Context, prefix string) (map[string]string, error) {
	out, err := r.run(ctx, "for-each-ref", "--format=%(objectname) %(refname)", prefix)
	if err != nil {
		return nil, fmt.Errorf("listing %s in %s: %w", prefix, r.WorkTree, err)
	}
	tips := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if oid, ref, ok := strings.Cut(sc.Text(), " "); ok {
			tips[ref] = oid
		}
	}
	return tips, nil
}

var oidRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`) })

// ValidOID reports whether s is a full hex object name (SHA-1 or SHA-256).
func ValidOID(s string) bool { return oidRE().MatchString(s) }
