package hostgit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseHeads(t *testing.T) {
	oid := strings.Repeat("a", 40)
	h, err := ParseHeads(strings.NewReader(oid + " refs/heads/main\n" + strings.Repeat("b", 64) + " refs/heads/feature/x\n"))
	if err != nil || len(h) != 2 || h["refs/heads/main"] != oid {
		t.Fatalf("heads %v, %v", h, err)
	}
	if h, err := ParseHeads(strings.NewReader("")); err != nil || len(h) != 0 {
		t.Errorf("an empty list: %v, %v", h, err)
	}
	for name, in := range map[string]string{
		"short oid":      "abc refs/heads/main\n",
		"upper-case oid": strings.Repeat("A", 40) + " refs/heads/main\n",
		"no ref":         oid + "\n",
		"a tag":          oid + " refs/tags/v1\n",
		"a remote ref":   oid + " refs/remotes/origin/main\n",
		"bad ref format": oid + " refs/heads/a..b\n",
		"escape in ref":  oid + " refs/heads/\x1b[2J\n",
		"listed twice":   oid + " refs/heads/main\n" + oid + " refs/heads/main\n",
		"two spaces":     oid + "  refs/heads/main\n",
		"too large":      strings.Repeat(oid+" refs/heads/main\n", MaxHeader/40),
	} {
		if _, err := ParseHeads(strings.NewReader(in)); !errors.Is(err, ErrBundle) {
			t.Errorf("%s: err = %v, want ErrBundle", name, err)
		}
	}
	var many strings.Builder
	for i := 0; i <= MaxRefs; i++ {
		many.WriteString(oid + " refs/heads/b" + strings.Repeat("x", i%7) + strconv.Itoa(i) + "\n")
	}
	if _, err := ParseHeads(strings.NewReader(many.String())); !errors.Is(err, ErrBundle) {
		t.Errorf("more than MaxRefs branches: err = %v", err)
	}
}

// TestFetchKeepsUnbundledBranches: a bundle leaves out a branch whose tip
// the host has (main, unchanged in the box); the branch list still sets
// it, a second pull of the same state changes nothing, a deleted branch
// goes, and a list that names a commit the host lacks, or disagrees with
// the bundle, changes nothing.
func TestFetchKeepsUnbundledBranches(t *testing.T) {
	host, box := hostAndBox(t)
	ctx := context.Background()
	r, err := Open(host)
	must(t, err)
	git(t, box, "checkout", "-q", "-b", "feature")
	git(t, box, "commit", "-q", "--allow-empty", "-m", "on feature")
	git(t, box, "checkout", "-q", "main")

	pull := func(name string) (Result, error) {
		t.Helper()
		haves, err := r.Haves(ctx, "web-1")
		must(t, err)
		bundle := filepath.Join(t.TempDir(), name+".bundle")
		args := append([]string{"bundle", "create", "-q", bundle, "--branches", "--not"}, haves...)
		cmd := gitCmd(box, args...)
		if err := cmd.Run(); err != nil { // nothing new: every branch
			git(t, box, "bundle", "create", "-q", bundle, "--branches")
		}
		in, err := os.Open(bundle)
		must(t, err)
		defer in.Close()
		b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
		must(t, err)
		return r.Fetch(ctx, b, boxHeads(t, box), "web-1", FetchOptions{})
	}
	remote := func() string {
		return git(t, host, "for-each-ref", "--format=%(refname:short) %(objectname)", RemotePrefix("web-1"))
	}

	res, err := pull("first")
	must(t, err)
	if len(res.Updates) != 2 || res.NewCommits != 1 {
		t.Errorf("first pull %+v", res)
	}
	if got := git(t, host, "rev-parse", RemotePrefix("web-1")+"main"); got != git(t, box, "rev-parse", "main") {
		t.Errorf("the unchanged main = %q", got)
	}
	res, err = pull("again")
	if err != nil || len(res.Updates) != 0 || res.NewCommits != 0 {
		t.Errorf("a pull with nothing new: %+v %v", res, err)
	}

	git(t, box, "branch", "-q", "-D", "feature")
	res, err = pull("deleted")
	if err != nil || len(res.Updates) != 1 || res.Updates[0].Branch != "feature" || res.Updates[0].New != "" {
		t.Errorf("after the box deleted feature: %+v %v", res, err)
	}

	before := remote()
	bundle := filepath.Join(t.TempDir(), "x.bundle")
	git(t, box, "bundle", "create", "-q", bundle, "--branches")
	in, err := os.Open(bundle)
	must(t, err)
	defer in.Close()
	b, err := ReceiveBundle(in, t.TempDir(), 1<<20)
	must(t, err)
	lies := boxHeads(t, box)
	lies["refs/heads/ghost"] = strings.Repeat("c", 40)
	if _, err := r.Fetch(ctx, b, lies, "web-1", FetchOptions{}); !errors.Is(err, ErrBundle) {
		t.Errorf("a listed commit the host lacks: err = %v", err)
	}
	other := boxHeads(t, box)
	other["refs/heads/main"] = strings.Repeat("d", 40)
	if _, err := r.Fetch(ctx, b, other, "web-1", FetchOptions{}); !errors.Is(err, ErrBundle) {
		t.Errorf("a list that disagrees with the bundle: err = %v", err)
	}
	if after := remote(); after != before {
		t.Errorf("a refused pull changed the box's branches:\n%s\n->\n%s", before, after)
	}
}

// FuzzParseHeads: whatever a box sends, an accepted list holds only
// well-formed object names and printable refs/heads/ names that pass
// CheckRefFormat, at most MaxRefs of them.
func FuzzParseHeads(f *testing.F) {
	oid := strings.Repeat("a", 40)
	f.Add(oid + " refs/heads/main\n")
	f.Add(oid + " refs/heads/a..b\n")
	f.Add(oid + " refs/heads/x\n" + oid + " refs/heads/x\n")
	f.Add("\x00 refs/heads/\x1b\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := ParseHeads(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(h) > MaxRefs {
			t.Fatalf("%d branches accepted", len(h))
		}
		for ref, o := range h {
			if !ValidOID(o) || !strings.HasPrefix(ref, "refs/heads/") || !Printable(ref) || !CheckRefFormat(ref) || len(ref) > MaxRefLen {
				t.Fatalf("accepted %q -> %q", ref, o)
			}
		}
	})
}
