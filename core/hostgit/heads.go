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

// syncUnbundled points the box's remote-tracking branches that the bundle
// left out at the commits the branch list names, which the host must
// already have, and removes those the box no longer lists: one ref
// transaction (git update-ref --stdin), so a failure changes nothing.
func (r Repo) syncUnbundled(ctx context.Context, b Bundle, heads Heads, prefix string) error {
	inBundle := map[string]bool{}
	for _, h := range b.Heads {
		inBundle[h.Name] = true
	}
	var want []string // full remote-tracking ref name -> oid, as "ref oid"
	var oids []string
	for ref, oid := range heads {
		if !inBundle[ref] {
			want = append(want, prefix+strings.TrimPrefix(ref, "refs/heads/")+" "+oid)
			oids = append(oids, oid)
		}
	}
	sort.Strings(want)
	if len(oids) > 0 {
		// Every named commit must be here already (it is why the bundle
		// left the branch out): a box naming one the host lacks is refused.
		cmd := r.command(ctx, "cat-file", "--batch-check=%(objecttype)")
		cmd.Stdin = strings.NewReader(strings.Join(oids, "\n") + "\n")
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("checking the box's branch tips: %w", err)
		}
		for i, typ := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if typ != "commit" {
				return fmt.Errorf("%w: a branch it lists points at %s, which is not a commit the host has", ErrBundle, oids[min(i, len(oids)-1)])
			}
		}
	}
	old, err := r.Tips(ctx, prefix)
	if err != nil {
		return err
	}
	var tx strings.Builder
	tx.WriteString("start\n")
	for _, w := range want {
		ref, oid, _ := strings.Cut(w, " ")
		if old[ref] != oid {
			fmt.Fprintf(&tx, "update %s %s\n", ref, oid)
		}
	}
	for ref := range old {
		if heads["refs/heads/"+strings.TrimPrefix(ref, prefix)] == "" {
			fmt.Fprintf(&tx, "delete %s\n", ref)
		}
	}
	tx.WriteString("prepare\ncommit\n")
	cmd := r.command(ctx, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(tx.String())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("updating the box's branches: %w: %s", err, SafeText(strings.TrimSpace(stderr.String()), 200))
	}
	return nil
}
