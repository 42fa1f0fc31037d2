package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
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
	// Submodules are the submodule and git metadata changes taken because
	// FetchOptions.AllowSubmodules said so; SubmoduleBranches carry them.
	Submodules        []SubmoduleChange
	SubmoduleBranches []string
}

// FetchOptions tune Fetch.
type FetchOptions struct {
	// AllowSubmodules takes commits that add or change a gitlink, a
	// .gitmodules or a .git entry (Fetch refuses them otherwise): once
	// merged, the host's git enters that repository and runs its config
	// and hooks.
	AllowSubmodules bool
	// Limits bound the fetch; a zero field is DefaultLimits'.
	Limits Limits
	// Into is where the branches land: "" is RemotePrefix(box), a pull's
	// place; IntoBranches makes them the repository's own branches (the
	// clone a remote host keeps of a project sent to it).
	Into string
	// Keep keeps the branches under Into that heads does not name: a
	// project sent to a remote host names the branch it sends, not every
	// branch the clone has. A pull removes them (the box deleted them).
	Keep bool
}

// IntoBranches is FetchOptions.Into for a repository's own branches.
const IntoBranches = "refs/heads/"

// Fetch takes a received bundle's branches into refs/remotes/corral/<box>/*,
// or under opt.Into (the branch list heads says where each branch is:
// those the bundle left out point at commits the host has; those the box
// no longer lists are removed unless opt.Keep). It is the one check and
// fetch of every bundle corral takes: a box's (corral pull), a remote
// host's (corral --host pull) and a project another machine sends
// (corral project receive). In order, each step refusing and changing
// nothing:
//
//  1. the bundle agrees with heads and the host's object format;
//  2. ScanPack walks its pack under opt.Limits (counts, declared sizes,
//     delta results), then git bundle verify checks the prerequisites;
//  3. git index-pack --strict indexes it into a quarantine (quarantine.go),
//     under the same limits;
//  4. every tip is a commit, every object the new commits reach is there;
//  5. inspect diffs every commit new to the host: a gitlink, .gitmodules
//     or .git added or changed is refused with a SubmoduleError unless
//     opt.AllowSubmodules;
//  6. the packs move into the host's objects, and one ref transaction
//     (git update-ref --stdin, each ref's old value checked) sets the
//     box's branches.
//
// The whole runs under opt.Limits.Timeout. Nothing else in the repository
// changes: no branch outside opt.Into, no config, no FETCH_HEAD, no tags,
// no work tree.
func (r Repo) Fetch(ctx context.Context, b Bundle, heads Heads, box string, opt FetchOptions) (Result, error) {
	lim := opt.Limits.orDefault()
	ctx, cancel := context.WithTimeout(ctx, lim.Timeout)
	defer cancel()
	res, err := r.fetch(ctx, b, heads, box, opt, lim)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return res, fmt.Errorf("%w: the fetch took longer than %s: %w", ErrBundle, lim.Timeout, err)
	}
	return res, err
}

func (r Repo) fetch(ctx context.Context, b Bundle, heads Heads, box string, opt FetchOptions, lim Limits) (Result, error) {
	allow := opt.AllowSubmodules
	prefix := opt.Into
	if prefix == "" {
		prefix = RemotePrefix(box)
	}
	if !CheckRefFormat(prefix+"x") || !strings.HasSuffix(prefix, "/") {
		return Result{}, fmt.Errorf("box name %q does not make a valid ref", box)
	}
	old, err := r.Tips(ctx, prefix)
	if err != nil {
		return Result{}, err
	}
	if err := checkHeads(b, heads); err != nil {
		return Result{}, err
	}
	if out, err := r.run(ctx, "rev-parse", "--show-object-format"); err != nil {
		return Result{}, err
	} else if f := strings.TrimSpace(string(out)); f != b.ObjectFormat {
		return Result{}, fmt.Errorf("%w: its objects are %s, the host repository's %s", ErrBundle, b.ObjectFormat, f)
	}
	for ref, oid := range heads {
		if len(oid) != 2*b.hashLen() {
			return Result{}, fmt.Errorf("%w: its branch list names %s at %s, not a %s object name", ErrBundle, SafeText(ref, 120), oid, b.ObjectFormat)
		}
	}
	info, err := ScanBundle(ctx, b, lim)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %w", ErrBundle, err)
	}
	if err := r.Verify(ctx, b); err != nil {
		return Result{}, err
	}
	q, err := r.newQuarantine(ctx, lim)
	if err != nil {
		return Result{}, err
	}
	defer q.remove()
	if info.Objects > 0 {
		if err := q.indexPack(ctx, b, lim, !allow); err != nil {
			return Result{}, fmt.Errorf("%w: %w", ErrBundle, err)
		}
	}
	var tips []string
	for _, oid := range heads {
		tips = append(tips, oid)
	}
	sort.Strings(tips)
	tips = compactStrings(tips)
	if err := q.commitsOK(ctx, tips); err != nil {
		return Result{}, err
	}
	sub, err := q.inspect(ctx, heads)
	if err != nil {
		return Result{}, err
	}
	if sub != nil && !allow {
		return Result{}, sub
	}
	if err := q.migrate(); err != nil {
		return Result{}, err
	}
	if err := r.setBranches(ctx, heads, prefix, old, opt.Keep); err != nil {
		return Result{}, err
	}
	now, err := r.Tips(ctx, prefix)
	if err != nil {
		return Result{}, err
	}
	res := Result{Updates: diffTips(prefix, old, now)}
	if sub != nil {
		res.Submodules, res.SubmoduleBranches = sub.Changes, sub.Branches
	}
	var newTips, not []string
	for _, u := range res.Updates {
		if u.New != "" {
			newTips = append(newTips, u.New)
		}
	}
	if len(newTips) == 0 {
		return res, nil
	}
	for _, oid := range old {
		not = append(not, oid)
	}
	sort.Strings(not)
	// Every rev is a validated hex object name or a fixed option: nothing
	// the box named reaches git's argument parser. New is what no branch
	// had: into the branches themselves, what none of them had before,
	// nor the boxes' branches pulled into the repository.
	revs := append(append(newTips, "--not"), not...)
	if prefix != IntoBranches {
		revs = append(revs, "--branches")
	} else {
		revs = append(revs, "--remotes")
	}
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
