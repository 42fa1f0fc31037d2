package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// ErrSubmodules marks a pull refused because its commits would bring a
// repository to the host (SubmoduleError).
var ErrSubmodules = errors.New("refusing the box's commits: they add or change a submodule or git metadata")

// MaxChanges caps the submodule changes a pull reports.
const MaxChanges = 100

// SubmoduleChange is one path that a commit new to the host adds or
// changes and that would bring a repository to the host.
type SubmoduleChange struct {
	Path   string // made safe to print
	Kind   ChangeKind
	Commit string // the first new commit found making the change
}

// SubmoduleError is a pull refused for its SubmoduleChanges: nothing was
// moved into the host's objects and no ref changed.
type SubmoduleError struct {
	Branches []string // the box's branches that carry the changes
	Changes  []SubmoduleChange
	More     int // changes past MaxChanges
}

func (e *SubmoduleError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, which the host's git would enter and run (its config, core.fsmonitor, hooks) once merged; on branch", ErrSubmodules)
	if len(e.Branches) != 1 {
		b.WriteString("es")
	}
	fmt.Fprintf(&b, " %s:", strings.Join(e.Branches, ", "))
	writeChanges(&b, e.Changes, e.More)
	b.WriteString("\nnothing was taken: the host's refs and work tree are unchanged")
	return b.String()
}

func writeChanges(b *strings.Builder, changes []SubmoduleChange, more int) {
	for _, c := range changes {
		fmt.Fprintf(b, "\n  %s (%s, commit %s)", c.Path, c.Kind, short(c.Commit))
	}
	if more > 0 {
		fmt.Fprintf(b, "\n  … %d more", more)
	}
}

func (e *SubmoduleError) Is(target error) bool { return target == ErrSubmodules }

func short(oid string) string { return oid[:min(len(oid), 10)] }

// commitsOK checks that every tip is a commit the quarantine or the host
// has: a branch naming anything else (a tree, a blob, nothing) is refused.
func (q *quarantine) commitsOK(ctx context.Context, tips []string) error {
	if len(tips) == 0 {
		return nil
	}
	out, err := q.repo.runIn(ctx, strings.Join(tips, "\n")+"\n", "cat-file", "--batch-check=%(objecttype)")
	if err != nil {
		return fmt.Errorf("checking the box's branch tips: %w", err)
	}
	types := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	for i, tip := range tips {
		if i >= len(types) || types[i] != "commit" {
			return fmt.Errorf("%w: a branch it lists points at %s, which is not a commit it sent or the host has", ErrBundle, tip)
		}
	}
	// Connectivity, as git fetch checks it: every object the new commits
	// reach is here.
	if _, err := q.repo.runIn(ctx, strings.Join(tips, "\n")+"\n", "rev-list", "--objects", "--quiet", "--stdin", "--not", "--all"); err != nil {
		return fmt.Errorf("%w: its objects are incomplete: %w", ErrBundle, err)
	}
	return nil
}

// inspect finds what the commits new to the host (reachable from the
// box's branches and from no host ref) add or change that would bring a
// repository to the host: every new commit is diffed against each of its
// parents (a root commit against the empty tree), recursively, trees
// included, gitlinks shown whatever the config or a .gitmodules says. No
// change in any new commit against any parent means the branches carry
// no gitlink, .gitmodules or .git that the host's own history lacks.
func (q *quarantine) inspect(ctx context.Context, heads Heads) (*SubmoduleError, error) {
	var tips []string
	for _, oid := range heads {
		tips = append(tips, oid)
	}
	sort.Strings(tips)
	tips = compactStrings(tips)
	if len(tips) == 0 {
		return nil, nil
	}
	out, err := q.repo.runIn(ctx, strings.Join(tips, "\n")+"\n", "rev-list", "--topo-order", "--parents", "--stdin", "--not", "--all")
	if err != nil {
		return nil, fmt.Errorf("listing the box's new commits: %w", err)
	}
	var order []string               // children before parents
	parents := map[string][]string{} // of new commits
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		order = append(order, f[0])
		parents[f[0]] = f[1:]
	}
	if len(order) == 0 {
		return nil, nil
	}
	flagged, e, err := q.diffTrees(ctx, order)
	if err != nil || len(flagged) == 0 {
		return nil, err
	}
	// A branch carries a change if its tip reaches a flagged new commit:
	// parents first, one pass.
	reach := map[string]bool{}
	for i := len(order) - 1; i >= 0; i-- {
		c := order[i]
		r := flagged[c]
		for _, p := range parents[c] {
			r = r || reach[p]
		}
		reach[c] = r
	}
	for ref, oid := range heads {
		if reach[oid] {
			e.Branches = append(e.Branches, strings.TrimPrefix(ref, "refs/heads/"))
		}
	}
	sort.Strings(e.Branches)
	return e, nil
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// diffTrees runs git diff-tree over commits and returns the commits that
// add or change a path classifyPath flags, with the changes.
func (q *quarantine) diffTrees(ctx context.Context, commits []string) (map[string]bool, *SubmoduleError, error) {
	// -m: a merge against each parent (without it diff-tree skips merges);
	// --root: a root commit against the empty tree; -t: tree entries too
	// (an added .git directory); -z: paths as they are.
	cmd := q.repo.command(ctx, "diff-tree", "--stdin", "-r", "-t", "-m", "--root", "-z",
		"--no-renames", "--ignore-submodules=none", "--no-ext-diff", "--no-textconv")
	cmd.Stdin = strings.NewReader(strings.Join(commits, "\n") + "\n")
	stderr := &capBuffer{max: 64 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("running git diff-tree: %w", err)
	}
	flagged, e, perr := parseDiffTree(stdout)
	if perr != nil {
		_ = cmd.Process.Kill()
	}
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if perr != nil {
		return nil, nil, fmt.Errorf("reading the box's changes: %w", perr)
	}
	if werr != nil {
		return nil, nil, fmt.Errorf("diffing the box's commits: %w", gitError("diff-tree", werr, stderr.String()))
	}
	return flagged, e, nil
}

// maxToken caps one field of diff-tree's output (a path).
const maxToken = 1 << 20

// parseDiffTree reads `git diff-tree --stdin -z --raw` output: a commit
// name, then records ":OLDMODE NEWMODE OLD NEW STATUS" each followed by
// its path, repeated per commit (and per parent with -m).
func parseDiffTree(r io.Reader) (map[string]bool, *SubmoduleError, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	token := func() ([]byte, error) {
		var tok []byte
		for {
			chunk, err := br.ReadSlice(0)
			tok = append(tok, chunk...)
			if len(tok) > maxToken {
				return nil, errors.New("a field longer than 1 MiB")
			}
			switch {
			case err == nil:
				return tok[:len(tok)-1], nil
			case errors.Is(err, bufio.ErrBufferFull):
				continue
			case errors.Is(err, io.EOF) && len(tok) == 0:
				return nil, io.EOF
			default:
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
		}
	}
	flagged := map[string]bool{}
	e := &SubmoduleError{}
	seen := map[string]bool{}
	commit := ""
	for {
		tok, err := token()
		if errors.Is(err, io.EOF) {
			return flagged, e, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if len(tok) == 0 || tok[0] != ':' {
			if !ValidOID(string(tok)) {
				return nil, nil, fmt.Errorf("unexpected diff-tree output %q", SafeText(string(tok), 80))
			}
			commit = string(tok)
			continue
		}
		f := bytes.Fields(tok[1:])
		if len(f) != 5 || commit == "" {
			return nil, nil, fmt.Errorf("unexpected diff-tree record %q", SafeText(string(tok), 120))
		}
		path, err := token()
		if err != nil {
			return nil, nil, err
		}
		if f[4][0] == 'D' {
			continue
		}
		kind, at, bad := classifyPath(string(path), string(f[1]))
		if !bad {
			continue
		}
		flagged[commit] = true
		key := string(kind) + "\x00" + at
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(e.Changes) >= MaxChanges {
			e.More++
			continue
		}
		e.Changes = append(e.Changes, SubmoduleChange{Path: SafeText(at, 200), Kind: kind, Commit: commit})
	}
}
