package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// RemotePrefix is where a box's branches land in the host repository.
func RemotePrefix(box string) string { return "refs/remotes/corral/" + box + "/" }

// MaxHaves caps the commits the host names to the box as already known.
const MaxHaves = 256

// MaxLog caps the commits a pull lists.
const MaxLog = 50

// Haves are commits the host already has that the box's bundle may leave
// out: the tips of the box's remote-tracking branches, then the host's own
// branches.
func (r Repo) Haves(ctx context.Context, box string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, prefix := range []string{RemotePrefix(box), "refs/heads/"} {
		tips, err := r.Tips(ctx, prefix)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(tips))
		for n := range tips {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			oid := tips[n]
			if !seen[oid] && len(out) < MaxHaves && ValidOID(oid) {
				seen[oid] = true
				out = append(out, oid)
			}
		}
	}
	return out, nil
}

// Update is one remote-tracking branch a pull changed.
type Update struct {
	Branch string // below the box's prefix; printable (ParseHeader checked it)
	Old    string // "" for a new branch
	New    string // "" for a branch the box deleted
}

// Result is what a pull brought.
type Result struct {
	Updates []Update
	// Commits are `git log --oneline` lines of the commits that arrived
	// (not on any host branch, nor pulled from this box before), newest
	// first, at most MaxLog, made safe to print.
	Commits []string
	// NewCommits counts them all.
	NewCommits int
}

// Fetch verifies a received bundle and fetches its branches into
// refs/remotes/corral/<box>/*; the branches the bundle left out (their
// tips are commits the host has) are set from heads, the box's branch
// list, and the box's branches it no longer lists are removed. Nothing
// else in the repository changes: no local branch, no config, no
// FETCH_HEAD, no tags.
func (r Repo) Fetch(ctx context.Context, b Bundle, heads Heads, box string) (Result, error) {
	prefix := RemotePrefix(box)
	if !CheckRefFormat(prefix + "x") {
		return Result{}, fmt.Errorf("box name %q does not make a valid ref", box)
	}
	old, err := r.Tips(ctx, prefix)
	if err != nil {
		return Result{}, err
	}
	if err := checkHeads(b, heads); err != nil {
		return Result{}, err
	}
	if err := r.Verify(ctx, b); err != nil {
		return Result{}, err
	}
	// No --prune: a bundle holds only the branches with something new.
	if _, err := r.run(ctx, "fetch", "--quiet", "--no-tags", "--no-recurse-submodules",
		"--no-write-fetch-head", "--no-auto-gc", "--no-auto-maintenance",
		b.Path, "+refs/heads/*:"+prefix+"*"); err != nil {
		return Result{}, fmt.Errorf("fetching the box's bundle into %s: %w", r.WorkTree, err)
	}
	if err := r.syncUnbundled(ctx, b, heads, prefix); err != nil {
		return Result{}, err
	}
	now, err := r.Tips(ctx, prefix)
	if err != nil {
		return Result{}, err
	}
	res := Result{Updates: diffTips(prefix, old, now)}
	var tips, not []string
	for _, u := range res.Updates {
		if u.New != "" {
			tips = append(tips, u.New)
		}
	}
	if len(tips) == 0 {
		return res, nil
	}
	for _, oid := range old {
		not = append(not, oid)
	}
	sort.Strings(not)
	// Every rev is a validated hex object name or a fixed option: nothing
	// the box named reaches git's argument parser.
	revs := append(append(tips, "--not"), not...)
	revs = append(revs, "--branches")
	out, err := r.run(ctx, append([]string{"rev-list", "--count"}, revs...)...)
	if err != nil {
		return res, fmt.Errorf("counting new commits: %w", err)
	}
	res.NewCommits, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	out, err = r.run(ctx, append([]string{"log", "--no-decorate", "--no-color", "--format=%h %s", "-n", strconv.Itoa(MaxLog)}, revs...)...)
	if err != nil {
		return res, fmt.Errorf("listing new commits: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		res.Commits = append(res.Commits, SafeText(sc.Text(), 120))
	}
	return res, nil
}

func diffTips(prefix string, old, now map[string]string) []Update {
	var out []Update
	for ref, oid := range now {
		if old[ref] != oid {
			out = append(out, Update{Branch: strings.TrimPrefix(ref, prefix), Old: old[ref], New: oid})
		}
	}
	for ref, oid := range old {
		if _, ok := now[ref]; !ok {
			out = append(out, Update{Branch: strings.TrimPrefix(ref, prefix), Old: oid})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Branch < out[j].Branch })
	return out
}
