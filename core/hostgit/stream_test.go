package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sendTo runs both ends of the exchange in memory: the receiver's haves,
// the sender's branch stream of heads, and the receiver's checks and
// fetch, as `corral project receive` does.
func sendTo(t *testing.T, from Repo, heads Heads, to Repo, opt FetchOptions) (Result, int64, error) {
	t.Helper()
	ctx := context.Background()
	var haves []string
	if to.GitDir != "" {
		tips, err := to.Tips(ctx, "refs/heads/")
		must(t, err)
		for _, oid := range tips {
			haves = append(haves, oid)
		}
	}
	var hv bytes.Buffer
	must(t, WriteHaves(&hv, haves))
	got, err := ReadHaves(bufio.NewReader(&hv))
	must(t, err)
	var stream bytes.Buffer
	must(t, from.WriteBranches(ctx, &stream, heads, got, t.TempDir()))
	size := int64(stream.Len())
	br := bufio.NewReader(&stream)
	list, err := ReadBranchList(br)
	if err != nil {
		return Result{}, size, err
	}
	b, err := ReceiveBundle(br, t.TempDir(), DefaultMaxBundle)
	if err != nil {
		return Result{}, size, err
	}
	defer os.Remove(b.Path)
	res, err := to.Fetch(ctx, b, list, "web-1", opt)
	return res, size, err
}

// TestBranchStreamIntoAClone: a project's branch goes into a new clone as
// its own branch and is checked out; a later send carries only the new
// commits and moves the work tree; a send with nothing new still works;
// the clone's other branches and its pulled box branches stay.
func TestBranchStreamIntoAClone(t *testing.T) {
	needGit(t)
	ctx := context.Background()
	root := t.TempDir()
	laptop := filepath.Join(root, "laptop")
	must(t, os.MkdirAll(laptop, 0o755))
	git(t, laptop, "init", "-q", "-b", "main")
	big := make([]byte, 64<<10)
	_, _ = rand.Read(big) // incompressible: the first send is large
	must(t, os.WriteFile(filepath.Join(laptop, "old.txt"), big, 0o644))
	git(t, laptop, "add", ".")
	git(t, laptop, "commit", "-q", "-m", "first")
	from, err := Open(laptop)
	must(t, err)
	head, err := from.CurrentBranch(ctx)
	if err != nil || head.Name != "refs/heads/main" {
		t.Fatalf("CurrentBranch = %+v, %v", head, err)
	}
	dir := filepath.Join(root, "clone")
	must(t, os.Mkdir(dir, 0o700))
	to, err := Init(ctx, dir, "sha1")
	must(t, err)
	opt := FetchOptions{Into: IntoBranches, Keep: true}
	res, full, err := sendTo(t, from, Heads{head.Name: head.OID}, to, opt)
	if err != nil || len(res.Updates) != 1 || res.NewCommits != 1 {
		t.Fatalf("first send: %+v %v", res, err)
	}
	must(t, to.CheckOut(ctx, head.Name))
	if b, err := os.ReadFile(filepath.Join(dir, "old.txt")); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("work tree: %v", err)
	}
	// The clone gains a branch of its own and a pulled box branch: a
	// later send keeps both.
	git(t, dir, "update-ref", "refs/heads/other", head.OID)
	git(t, dir, "update-ref", RemotePrefix("web-1")+"main", head.OID)

	must(t, os.WriteFile(filepath.Join(laptop, "new.txt"), []byte("new\n"), 0o644))
	git(t, laptop, "rm", "-q", "old.txt")
	git(t, laptop, "add", ".")
	git(t, laptop, "commit", "-q", "-m", "second")
	head, err = from.CurrentBranch(ctx)
	must(t, err)
	res, incr, err := sendTo(t, from, Heads{head.Name: head.OID}, to, opt)
	if err != nil || len(res.Updates) != 1 || res.NewCommits != 1 || res.Updates[0].Old == "" {
		t.Fatalf("second send: %+v %v", res, err)
	}
	if incr >= full/4 {
		t.Errorf("second send %d bytes, first %d: the history was sent again", incr, full)
	}
	must(t, to.CheckOut(ctx, head.Name))
	if _, err := os.Stat(filepath.Join(dir, "old.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old.txt still in the work tree: %v", err)
	}
	if got := git(t, dir, "rev-parse", "HEAD"); got != head.OID {
		t.Errorf("HEAD = %s, want %s", got, head.OID)
	}
	if got := git(t, dir, "for-each-ref", "--format=%(refname)"); got != "refs/heads/main\nrefs/heads/other\nrefs/remotes/corral/web-1/main" {
		t.Errorf("refs:\n%s", got)
	}
	if st := git(t, dir, "status", "--porcelain"); st != "" {
		t.Errorf("work tree differs from HEAD:\n%s", st)
	}
	// Nothing new: the stream still carries the branch, which stays.
	res, _, err = sendTo(t, from, Heads{head.Name: head.OID}, to, opt)
	if err != nil || len(res.Updates) != 0 {
		t.Fatalf("send with nothing new: %+v %v", res, err)
	}
}

// TestBranchStreamRenames: the stream names branches as the caller says
// (a remote host sends its refs/remotes/corral/<box>/* as the box's
// branches), and a pull takes them under the box's prefix, removing one
// the box no longer lists.
func TestBranchStreamRenames(t *testing.T) {
	host, box := hostAndBox(t)
	ctx := context.Background()
	git(t, box, "checkout", "-q", "-b", "topic")
	git(t, box, "commit", "-q", "--allow-empty", "-m", "in the box")
	from, err := Open(box)
	must(t, err)
	to, err := Open(host)
	must(t, err)
	git(t, host, "update-ref", RemotePrefix("web-1")+"gone", git(t, host, "rev-parse", "main"))
	heads := Heads{"refs/heads/topic": git(t, box, "rev-parse", "topic"), "refs/heads/main": git(t, box, "rev-parse", "main")}
	res, _, err := sendTo(t, Repo{GitDir: from.GitDir, WorkTree: from.WorkTree}, heads, to, FetchOptions{})
	if err != nil || res.NewCommits != 1 || len(res.Updates) != 3 {
		t.Fatalf("pull: %+v %v", res, err)
	}
	if got := git(t, host, "for-each-ref", "--format=%(refname)", "refs/remotes/"); got != "refs/remotes/corral/web-1/main\nrefs/remotes/corral/web-1/topic" {
		t.Errorf("refs:\n%s", got)
	}
	if err := from.WriteBranches(ctx, &bytes.Buffer{}, Heads{"refs/tags/v1": heads["refs/heads/main"]}, nil, t.TempDir()); err == nil {
		t.Error("a tag was sent as a branch")
	}
}

// TestBranchStreamRefusals: what either side reads from the other is
// checked before git sees it.
func TestBranchStreamRefusals(t *testing.T) {
	oid := strings.Repeat("a", 40)
	for name, in := range map[string]string{
		"no magic":     "0000 refs/heads/main\n\n",
		"empty first":  "\n" + oid + " refs/heads/main\n\n",
		"nothing":      "",
		"tag":          branchesMagic + "\n" + oid + " refs/tags/v1\n\n",
		"HEAD":         branchesMagic + "\n" + oid + " HEAD\n\n",
		"bad oid":      branchesMagic + "\n" + "xyz refs/heads/main\n\n",
		"cut short":    branchesMagic + "\n" + oid + " refs/heads/main\n",
		"empty":        branchesMagic + "\n\n",
		"control char": branchesMagic + "\n" + oid + " refs/heads/ma\x1bin\n\n",
		"huge line":    branchesMagic + "\n" + oid + " refs/heads/" + strings.Repeat("x", MaxHeader) + "\n\n",
	} {
		if _, err := ReadBranchList(bufio.NewReader(strings.NewReader(in))); !errors.Is(err, ErrBundle) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	for name, in := range map[string]string{
		"no magic":  oid + "\n\n",
		"empty":     "\n\n",
		"nothing":   "",
		"bad oid":   havesMagic + "\n" + "HEAD\n\n",
		"option":    havesMagic + "\n" + "--all\n\n",
		"cut short": havesMagic + "\n" + oid + "\n",
		"too many":  havesMagic + "\n" + strings.Repeat(oid+"\n", MaxHaves+1) + "\n",
	} {
		if _, err := ReadHaves(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("haves %s: accepted", name)
		}
	}
}

// FuzzReadBranchList: whatever the other side sends, a list that is
// accepted names only valid, printable branches at full object names,
// and leaves the reader at the byte after its empty line.
func FuzzReadBranchList(f *testing.F) {
	oid := strings.Repeat("a", 40)
	f.Add(branchesMagic + "\n" + oid + " refs/heads/main\n\nPACK")
	f.Add(branchesMagic + "\n" + oid + " refs/heads/a\n" + oid + " refs/heads/a\n\n")
	f.Add(branchesMagic + "\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		br := bufio.NewReader(strings.NewReader(in))
		heads, err := ReadBranchList(br)
		if err != nil {
			return
		}
		for ref, oid := range heads {
			if !strings.HasPrefix(ref, "refs/heads/") || !CheckRefFormat(ref) || !Printable(ref) || !ValidOID(oid) {
				t.Fatalf("accepted %q at %q", ref, oid)
			}
		}
		b, _ := io.ReadAll(br) // all of it: the rest may hold any byte
		rest := string(b)
		if !strings.HasSuffix(in, "\n\n"+rest) {
			t.Fatalf("the reader stopped elsewhere: rest %q", rest)
		}
	})
}
