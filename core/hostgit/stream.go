package hostgit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Branches travel between two corrals over ssh (docs/REMOTE.md): a
// project from a laptop to its remote host (`corral project receive`),
// and a remote box's commits back (`corral project pull-bundle`). The
// receiver first says what it has, so the sender can leave that history
// out:
//
//	# corral haves v1
//	OID                      (at most MaxHaves, full hex object names)
//	(an empty line)
//
// and the sender answers with a branch stream:
//
//	# corral branches v1
//	OID refs/heads/NAME      (the sender's branch list: ParseHeads's lines)
//	(an empty line)
//	a git bundle             (ReceiveBundle's input)
//
// The receiver reads the list with ReadBranchList and the bundle with
// ReceiveBundle, and takes both with Fetch: the checks of a box's pull,
// whoever sent them. Both sides treat what the other wrote as hostile.
const (
	havesMagic    = "# corral haves v1"
	branchesMagic = "# corral branches v1"
)

// WriteHaves writes the haves part of the exchange: the commits the
// receiver has, each a full hex object name (others are left out).
func WriteHaves(w io.Writer, haves []string) error {
	var b bytes.Buffer
	b.WriteString(havesMagic + "\n")
	n := 0
	for _, h := range haves {
		if ValidOID(h) && n < MaxHaves {
			b.WriteString(h + "\n")
			n++
		}
	}
	b.WriteString("\n")
	_, err := w.Write(b.Bytes())
	return err
}

// ReadHaves reads what WriteHaves wrote: the magic line, at most MaxHaves
// full hex object names, an empty line. Anything else is an error.
func ReadHaves(br *bufio.Reader) ([]string, error) {
	sig, err := readLine(br, 64)
	switch {
	case err != nil && (sig == "" || sig == havesMagic):
		return nil, fmt.Errorf("reading the list of commits the other side has: %w", err)
	case sig != havesMagic:
		return nil, fmt.Errorf("the other side sent no list of commits it has (it began %q)", SafeText(sig, 40))
	}
	var haves []string
	for {
		line, err := readLine(br, 128)
		if err != nil {
			return nil, fmt.Errorf("reading the list of commits the other side has: %w", err)
		}
		switch {
		case line == "":
			return haves, nil
		case !ValidOID(line):
			return nil, fmt.Errorf("the list of commits the other side has holds %q, not an object name", SafeText(line, 80))
		case len(haves) >= MaxHaves:
			return nil, fmt.Errorf("the other side names more than %d commits it has", MaxHaves)
		default:
			haves = append(haves, line)
		}
	}
}

// ReadBranchList reads the branch list at the start of a branch stream,
// leaving br at the bundle: the magic line, then lines as ParseHeads
// checks them (in at most MaxHeader bytes), then an empty line.
func ReadBranchList(br *bufio.Reader) (Heads, error) {
	sig, err := readLine(br, 64)
	switch {
	case err != nil && (sig == "" || sig == branchesMagic):
		return nil, fmt.Errorf("%w: reading its branch list: %w", ErrBundle, err)
	case sig != branchesMagic:
		return nil, fmt.Errorf("%w: not a corral branch stream (it began %q)", ErrBundle, SafeText(sig, 40))
	}
	var list bytes.Buffer
	for {
		line, err := readLine(br, MaxHeader-list.Len())
		if err != nil {
			return nil, fmt.Errorf("%w: reading its branch list: %w", ErrBundle, err)
		}
		if line == "" {
			break
		}
		list.WriteString(line + "\n")
	}
	heads, err := ParseHeads(&list)
	if err != nil {
		return nil, err
	}
	if len(heads) == 0 {
		return nil, fmt.Errorf("%w: its branch list is empty", ErrBundle)
	}
	return heads, nil
}

// errLineTooLong: a line of the exchange is over its cap.
var errLineTooLong = errors.New("a line is too long")

// readLine reads one line of at most max bytes (the newline excluded).
// io.ErrUnexpectedEOF is a stream cut short; with an error, the line is
// what was read of it (at most max bytes), for the message.
func readLine(br *bufio.Reader, max int) (string, error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		b = append(b, chunk...)
		if len(b) > max+1 {
			return string(b[:max]), errLineTooLong
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return string(b), io.ErrUnexpectedEOF
		case err != nil:
			return string(b), err
		}
		return string(b[:len(b)-1]), nil
	}
}

// WriteBranches writes a branch stream of heads (full branch names to
// commits of r) to w, its bundle leaving out the history of those haves
// that r has as commits. The branch names in the stream are heads' own,
// whatever r calls those commits: the bundle is made in a temporary
// repository under tmpDir that borrows r's objects (an alternate) and
// holds exactly heads as its branches. When the haves reach every head
// (nothing new; git refuses an empty bundle) the bundle carries the first
// branch alone, without its parents' history: the receiver has it.
func (r Repo) WriteBranches(ctx context.Context, w io.Writer, heads Heads, haves []string, tmpDir string) error {
	if len(heads) == 0 {
		return errors.New("no branch to send")
	}
	names := make([]string, 0, len(heads))
	for ref, oid := range heads {
		if !strings.HasPrefix(ref, "refs/heads/") || !CheckRefFormat(ref) || !Printable(ref) || !ValidOID(oid) {
			return fmt.Errorf("cannot send branch %q at %q: not a valid branch name and commit", SafeText(ref, 120), SafeText(oid, 80))
		}
		names = append(names, ref)
	}
	sort.Strings(names)
	out, err := r.run(ctx, "rev-parse", "--show-object-format")
	if err != nil {
		return err
	}
	format := strings.TrimSpace(string(out))
	objects, err := r.objectsDir(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(tmpDir, "send-*")
	if err != nil {
		return fmt.Errorf("creating a directory to bundle %s: %w", r.WorkTree, err)
	}
	defer os.RemoveAll(dir)
	t := Repo{GitDir: filepath.Join(dir, "repo.git"), WorkTree: r.WorkTree}
	if err := os.Mkdir(t.GitDir, 0o700); err != nil {
		return err
	}
	if _, err := t.run(ctx, "init", "-q", "--bare", "--template=", "--object-format="+format); err != nil {
		return fmt.Errorf("bundling %s: %w", r.WorkTree, err)
	}
	info := filepath.Join(t.GitDir, "objects", "info")
	if err := os.MkdirAll(info, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(info, "alternates"), []byte(quoteAlternate(objects)+"\n"), 0o600); err != nil {
		return err
	}
	var tx strings.Builder
	tx.WriteString("start\n")
	for _, ref := range names {
		fmt.Fprintf(&tx, "create %s %s\n", ref, heads[ref])
	}
	tx.WriteString("prepare\ncommit\n")
	if _, err := t.runIn(ctx, tx.String(), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("bundling %s: %w", r.WorkTree, err)
	}
	known, err := t.commits(ctx, haves)
	if err != nil {
		return err
	}
	bundle := filepath.Join(dir, "branches.bundle")
	if _, err := t.run(ctx, append([]string{"bundle", "create", "-q", bundle, "--branches", "--not"}, known...)...); err != nil {
		if _, err2 := t.run(ctx, "bundle", "create", "-q", bundle, names[0], "--not", names[0]+"^@"); err2 != nil {
			return fmt.Errorf("bundling %s: %w", r.WorkTree, err)
		}
	}
	f, err := os.Open(bundle)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(branchesMagic + "\n")
	for _, ref := range names {
		fmt.Fprintf(bw, "%s %s\n", heads[ref], ref)
	}
	bw.WriteString("\n")
	if _, err := io.Copy(bw, f); err != nil {
		return fmt.Errorf("sending the bundle of %s: %w", r.WorkTree, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sending the bundle of %s: %w", r.WorkTree, err)
	}
	return nil
}

// commits returns those of oids that are full hex object names of commits
// in r, in order.
func (r Repo) commits(ctx context.Context, oids []string) ([]string, error) {
	var in strings.Builder
	for _, o := range oids {
		if ValidOID(o) {
			in.WriteString(o + "\n")
		}
	}
	if in.Len() == 0 {
		return nil, nil
	}
	out, err := r.runIn(ctx, in.String(), "cat-file", "--batch-check=%(objectname) %(objecttype)")
	if err != nil {
		return nil, err
	}
	var known []string
	for _, l := range strings.Split(string(out), "\n") {
		if oid, typ, ok := strings.Cut(l, " "); ok && typ == "commit" && ValidOID(oid) {
			known = append(known, oid)
		}
	}
	return known, nil
}

// ErrDetached: the repository's HEAD names no branch.
var ErrDetached = errors.New("HEAD is detached (no branch is checked out)")

// ErrNoCommit: the checked-out branch has no commit yet.
var ErrNoCommit = errors.New("no commit yet")

// CurrentBranch is the checked-out branch (refs/heads/...) and its commit.
func (r Repo) CurrentBranch(ctx context.Context) (Head, error) {
	out, err := r.run(ctx, "symbolic-ref", "-q", "HEAD")
	ref := strings.TrimSpace(string(out))
	if err != nil || !strings.HasPrefix(ref, "refs/heads/") {
		return Head{}, fmt.Errorf("%s: %w", r.WorkTree, ErrDetached)
	}
	if !CheckRefFormat(ref) || !Printable(ref) {
		return Head{}, fmt.Errorf("%s: branch %q: not a name corral sends", r.WorkTree, SafeText(ref, 120))
	}
	out, err = r.run(ctx, "rev-parse", "--verify", "-q", ref+"^{commit}")
	oid := strings.TrimSpace(string(out))
	if err != nil || !ValidOID(oid) {
		return Head{}, fmt.Errorf("%s: branch %s: %w", r.WorkTree, strings.TrimPrefix(ref, "refs/heads/"), ErrNoCommit)
	}
	return Head{Name: ref, OID: oid}, nil
}

// Init creates an empty repository with a work tree in dir (which must
// exist and be empty) for objects of format ("sha1" or "sha256"), with no
// template (no sample hooks, no info/exclude), and opens it.
func Init(ctx context.Context, dir, format string) (Repo, error) {
	if format != "sha1" && format != "sha256" {
		return Repo{}, fmt.Errorf("creating a repository in %s: unknown object format %q", dir, format)
	}
	r := Repo{GitDir: filepath.Join(dir, ".git"), WorkTree: dir}
	if err := os.Mkdir(r.GitDir, 0o700); err != nil {
		return Repo{}, fmt.Errorf("creating a repository in %s: %w", dir, err)
	}
	r.env = []string{"GIT_WORK_TREE=" + dir}
	if _, err := r.run(ctx, "init", "-q", "--template=", "--object-format="+format); err != nil {
		return Repo{}, fmt.Errorf("creating a repository in %s: %w", dir, err)
	}
	return Open(dir)
}

// CheckOut makes branch (refs/heads/...) the repository's HEAD and its
// work tree and index that branch's tree: files the old tree had and the
// new one has not are removed, and untracked files in the way are
// overwritten. It is meant for a work tree only corral writes (a remote
// host's clone of a project sent to it). git's own checks apply: no path
// through a symbolic link, no .git in any spelling (core.protectHFS and
// core.protectNTFS are on); no hook runs and no submodule is entered.
func (r Repo) CheckOut(ctx context.Context, branch string) error {
	if !strings.HasPrefix(branch, "refs/heads/") || !CheckRefFormat(branch) {
		return fmt.Errorf("checking out %q: not a branch", SafeText(branch, 120))
	}
	w := r
	w.env = append(append([]string(nil), r.env...), "GIT_WORK_TREE="+r.WorkTree)
	if _, err := w.run(ctx, "symbolic-ref", "HEAD", branch); err != nil {
		return fmt.Errorf("checking out %s in %s: %w", branch, r.WorkTree, err)
	}
	if _, err := w.run(ctx, "read-tree", "--reset", "-u", "--no-recurse-submodules", "HEAD"); err != nil {
		return fmt.Errorf("checking out %s in %s: %w", branch, r.WorkTree, err)
	}
	return nil
}
