package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Heads are a box's branches as it lists them (`corral-repo heads`): full
// ref name (refs/heads/...) to object name. A bundle leaves out every
// branch whose tip the host already has, so the list is what tells an
// unchanged branch from a deleted one.
type Heads map[string]string

// ParseHeads reads a box's branch list: lines "OID refs/heads/NAME", at
// most MaxRefs of them in MaxHeader bytes, each object name well formed,
// each name passing CheckRefFormat, printable and listed once. The box is
// hostile: anything else is an error.
func ParseHeads(src io.Reader) (Heads, error) {
	b, err := io.ReadAll(io.LimitReader(src, MaxHeader+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading its branch list: %w", ErrBundle, err)
	}
	if len(b) > MaxHeader {
		return nil, fmt.Errorf("%w: its branch list is larger than %d bytes", ErrBundle, MaxHeader)
	}
	heads := Heads{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), MaxHeader)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		oid, ref, ok := strings.Cut(line, " ")
		switch {
		case !ok || !ValidOID(oid):
			return nil, fmt.Errorf("%w: branch list line %d is not \"OBJECT refs/heads/NAME\": %s", ErrBundle, n, SafeText(line, 120))
		case !strings.HasPrefix(ref, "refs/heads/") || len(ref) > MaxRefLen || !Printable(ref) || !CheckRefFormat(ref):
			return nil, fmt.Errorf("%w: branch list line %d names no valid branch: %s", ErrBundle, n, SafeText(ref, 120))
		case heads[ref] != "":
			return nil, fmt.Errorf("%w: branch list names %s twice", ErrBundle, SafeText(ref, 120))
		case len(heads) >= MaxRefs:
			return nil, fmt.Errorf("%w: more than %d branches", ErrBundle, MaxRefs)
		}
		heads[ref] = oid
	}
	return heads, sc.Err()
}

// checkHeads is the agreement of a bundle with the branch list sent
// beside it: every branch in the bundle is listed, at the same commit.
func checkHeads(b Bundle, heads Heads) error {
	for _, h := range b.Heads {
		if heads[h.Name] != h.OID {
			return fmt.Errorf("%w: its bundle has %s at %s, its branch list %q (did the box change it during the pull? pull again)", ErrBundle, SafeText(h.Name, 120), h.OID, heads[h.Name])
		}
	}
	return nil
}

// setBranches sets the box's remote-tracking branches to heads, the box's
// branch list, and removes those it no longer lists (unless keep): one ref
// transaction (git update-ref --stdin) in which every ref's old value
// (old, read before the fetch) is checked, so a failure or a concurrent
// change changes nothing.
func (r Repo) setBranches(ctx context.Context, heads Heads, prefix string, old map[string]string, keep bool) error {
	var tx strings.Builder
	tx.WriteString("start\n")
	names := make([]string, 0, len(heads))
	for ref := range heads {
		names = append(names, ref)
	}
	sort.Strings(names)
	for _, ref := range names {
		oid := heads[ref]
		dst := prefix + strings.TrimPrefix(ref, "refs/heads/")
		switch was := old[dst]; {
		case was == "":
			fmt.Fprintf(&tx, "create %s %s\n", dst, oid)
		case was != oid:
			fmt.Fprintf(&tx, "update %s %s %s\n", dst, oid, was)
		}
	}
	for ref, was := range old {
		if !keep && heads["refs/heads/"+strings.TrimPrefix(ref, prefix)] == "" {
			fmt.Fprintf(&tx, "delete %s %s\n", ref, was)
		}
	}
	tx.WriteString("prepare\ncommit\n")
	if _, err := r.runIn(ctx, tx.String(), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("updating the box's branches: %w", err)
	}
	return nil
}
