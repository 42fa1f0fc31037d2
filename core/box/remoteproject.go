package box

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
)

// Remote projects (docs/REMOTE.md, "The project: cloned, never shared"):
// a project command forwarded to a remote host without -C first sends the
// project's checked-out branch there (Remote.Send, the host's
// Remote.Receive), into a clone the host keeps at paths.RemoteProject(box)
// with source = "clone", and runs there; `corral --host NAME pull` brings
// the box's commits back (Remote.PullFrom, the host's Service.PullBundle
// after its own pull). Both directions are branch streams (hostgit) taken
// by takeBundle, the one check of every bundle: each side treats what the
// other sends as a box's bundle.

// Remote moves a project between this machine and a remote host. It
// needs no Lima and no box on this machine: the box is the host's.
type Remote struct {
	Layout   paths.Layout
	Runner   remote.Runner
	Actor    audit.Actor
	Logger   *slog.Logger
	Progress io.Writer // nil: say nothing
	Now      func() time.Time
	// MaxBundle caps a bundle received (0: hostgit.DefaultMaxBundle).
	MaxBundle int64
	// Limits bound the fetch; zero fields are hostgit.DefaultLimits'.
	Limits hostgit.Limits
}

// transferTimeout bounds one transfer, as a box's pull is bounded.
const transferTimeout = 30 * time.Minute

// maxReceiveResult caps the answer of `corral project receive`.
const maxReceiveResult = 8 << 10

func (r Remote) maxBundle() int64 {
	if r.MaxBundle > 0 {
		return r.MaxBundle
	}
	return hostgit.DefaultMaxBundle
}

func (r Remote) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r Remote) progress(format string, args ...any) {
	if r.Progress != nil {
		fmt.Fprintf(r.Progress, format+"\n", args...)
	}
}

func (r Remote) audit(ev audit.Event) {
	ev.Actor = r.Actor
	log, err := audit.Open(r.Layout.AuditLog())
	if err == nil {
		err = errors.Join(log.Record(ev), log.Close())
	}
	if err != nil && r.Logger != nil {
		r.Logger.Warn("audit log write failed", "err", err)
	}
}

// Received is what `corral project receive` answers the sending machine,
// one JSON line after the exchange.
type Received struct {
	// Dir is the clone's directory on the host: the project directory of
	// the forwarded command (-C).
	Dir        string `json:"dir"`
	Branch     string `json:"branch"` // below refs/heads/
	Commit     string `json:"commit"`
	NewCommits int    `json:"new_commits"`
}

// Receive is the host's end of Send: it takes the project another machine
// sends for box into paths.RemoteProject(box), a clone, creating it the
// first time. In order, nothing changing until the checks pass:
//
//  1. box is a valid box name here, and no box of that name belongs to
//     another project on this host;
//  2. the box's trusted layer says source = "clone" (config.EnsureClone):
//     a box never mounts the directory later sends update;
//  3. the commits the clone has go to the sender (hostgit.WriteHaves);
//  4. the branch stream from in: one branch, its bundle capped and
//     checked (hostgit.ReadBranchList, ReceiveBundle) and fetched by
//     takeBundle into the clone's own branches, every other branch (the
//     box's pulled ones under refs/remotes/corral/<box>/) kept;
//  5. that branch is checked out (hostgit.CheckOut) and the answer
//     (Received) written to out.
//
// A first send that fails leaves no clone behind.
func (r Remote) Receive(ctx context.Context, box string, in io.Reader, out io.Writer) (res Received, err error) {
	l := r.Layout
	if err := project.CheckName(box, l.LimaHome()); err != nil {
		return res, fmt.Errorf("receiving a project: %w", err)
	}
	dir := l.RemoteProject(box)
	what := "receiving the project for box " + box
	if m, err := boxmeta.Read(l, box); err == nil && !project.SameDir(m.Project, dir) {
		return res, hint.New(fmt.Errorf("%s: box %s on this host is the box of %s, not of a project sent to it", what, box, m.Project),
			fmt.Sprintf("work with that checkout there: corral --host HOST -C %s ...; or remove the box there", m.Project))
	} else if err != nil && !errors.Is(err, boxmeta.ErrNotFound) {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if _, err := config.EnsureClone(l.ProjectConfig(box), "corral project receive", r.now()); err != nil {
		return res, hint.New(fmt.Errorf("%s: %w", what, err), "a project sent from another machine must be a clone: remove the source line of "+l.ProjectConfig(box)+" there")
	}
	for _, d := range []string{l.RemoteProjectsDir(), l.RunDir()} {
		if err := os.MkdirAll(d, atomicfile.DirMode); err != nil {
			return res, fmt.Errorf("%s: %w", what, err)
		}
	}
	unlock, err := atomicfile.Lock(filepath.Join(l.RemoteProjectsDir(), "."+box+".lock"))
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	defer unlock()

	var repo hostgit.Repo
	var haves []string
	_, statErr := os.Lstat(dir)
	exists := statErr == nil
	if exists {
		if repo, err = hostgit.Open(dir); err != nil {
			return res, hint.New(fmt.Errorf("%s: %w", what, err), "corral keeps a clone there; move the directory away to start again: "+dir)
		}
		if haves, err = repo.Haves(ctx, box); err != nil {
			return res, fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := hostgit.WriteHaves(out, haves); err != nil {
		return res, fmt.Errorf("%s: telling the sender what is here: %w", what, err)
	}
	br := bufio.NewReaderSize(in, 64<<10)
	heads, err := hostgit.ReadBranchList(br)
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if len(heads) != 1 {
		return res, fmt.Errorf("%s: %w: it names %d branches, a project sends one", what, hostgit.ErrBundle, len(heads))
	}
	var branch, commit string
	for ref, oid := range heads {
		branch, commit = ref, oid
	}
	b, err := hostgit.ReceiveBundle(br, l.RunDir(), r.maxBundle())
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	defer os.Remove(b.Path)
	if !exists {
		if err := os.Mkdir(dir, atomicfile.DirMode); err != nil {
			return res, fmt.Errorf("%s: %w", what, err)
		}
		defer func() {
			if err != nil {
				_ = os.RemoveAll(dir)
			}
		}()
		if repo, err = hostgit.Init(ctx, dir, b.ObjectFormat); err != nil {
			return res, fmt.Errorf("%s: %w", what, err)
		}
	}
	got, err := takeBundle(ctx, r.audit, repo, b, heads, intake{
		box: box, kind: audit.KindReceive, what: what,
		submoduleHint: "a project with submodules cannot be sent yet: give -C a checkout on the host (see docs/REMOTE.md)",
		fields:        map[string]any{"branch": strings.TrimPrefix(branch, "refs/heads/")},
		opt:           hostgit.FetchOptions{Into: hostgit.IntoBranches, Keep: true, Limits: r.Limits},
	})
	if err != nil {
		return res, err
	}
	if err := repo.CheckOut(ctx, branch); err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	res = Received{Dir: dir, Branch: strings.TrimPrefix(branch, "refs/heads/"), Commit: commit, NewCommits: got.NewCommits}
	line, err := json.Marshal(res)
	if err != nil {
		return res, err
	}
	if _, err := out.Write(append(line, '\n')); err != nil {
		return res, fmt.Errorf("%s: answering the sender: %w", what, err)
	}
	return res, nil
}

// errWriter remembers the first error of writing to w.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// Send sends the checked-out branch of the project p to host h, into the
// clone the host keeps for p.Box (the host's Receive), and returns the
// host's answer: the clone's directory there, for the forwarded command's
// -C. Only the commits the host lacks travel. The version check is the
// caller's. A project that is no git repository is
// hostgit.ErrNotRepository; a detached HEAD or a branch without a commit
// is refused with a hint.
func (r Remote) Send(ctx context.Context, h remote.Host, p project.Project) (Received, error) {
	repo, err := hostgit.Open(p.Dir)
	if err != nil {
		return Received{}, err
	}
	head, err := repo.CurrentBranch(ctx)
	switch {
	case errors.Is(err, hostgit.ErrDetached):
		return Received{}, hint.New(fmt.Errorf("sending the project to host %s: %w", h.Name, err),
			"check out a branch (git switch NAME), or give -C a path on the host")
	case errors.Is(err, hostgit.ErrNoCommit):
		return Received{}, hint.New(fmt.Errorf("sending the project to host %s: %w", h.Name, err),
			"commit first: only committed history goes to a remote host (docs/REMOTE.md)")
	case err != nil:
		return Received{}, fmt.Errorf("sending the project to host %s: %w", h.Name, err)
	}
	if err := os.MkdirAll(r.Layout.RunDir(), atomicfile.DirMode); err != nil {
		return Received{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	var got Received
	err = r.Runner.Transfer(ctx, h, []string{"project", "receive", p.Box}, func(in io.WriteCloser, out io.Reader) error {
		br := bufio.NewReader(out)
		haves, err := hostgit.ReadHaves(br)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		w := &errWriter{w: in}
		if err := repo.WriteBranches(ctx, w, hostgit.Heads{head.Name: head.OID}, haves, r.Layout.RunDir()); err != nil {
			if w.err != nil {
				return err // the host stopped reading: its error says why
			}
			return remote.LocalFailure(fmt.Errorf("sending the project to host %s: %w", h.Name, err))
		}
		_ = in.Close() // the end of the stream: the host checks it now
		got, err = readReceived(br, p.Box, head)
		if err != nil {
			return fmt.Errorf("host %s: %w", h.Name, err)
		}
		return nil
	})
	if err != nil {
		return Received{}, err
	}
	r.progress("sent branch %s to host %s (%s), box %s", got.Branch, h.Name, commitCount(got.NewCommits), p.Box)
	return got, nil
}

// readReceived reads the host's answer (hostile: the host writes it): one
// JSON object, known fields only, for the branch and commit sent, its
// directory an absolute, clean, printable path ending in the box's name.
func readReceived(r io.Reader, box string, sent hostgit.Head) (Received, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxReceiveResult+1))
	if err != nil {
		return Received{}, fmt.Errorf("reading its answer: %w", err)
	}
	if len(b) > maxReceiveResult {
		return Received{}, fmt.Errorf("its answer is longer than %d bytes", maxReceiveResult)
	}
	var got Received
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return Received{}, fmt.Errorf("its answer is not what corral project receive writes: %s", hostgit.SafeText(string(b), 120))
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return Received{}, fmt.Errorf("its answer has more than one object: %s", hostgit.SafeText(string(rest), 80))
	}
	switch {
	case got.Branch != strings.TrimPrefix(sent.Name, "refs/heads/") || got.Commit != sent.OID:
		return Received{}, fmt.Errorf("it answered for branch %s at %s, not the branch sent", hostgit.SafeText(got.Branch, 80), hostgit.SafeText(got.Commit, 80))
	case len(got.Dir) > 4096 || !path.IsAbs(got.Dir) || path.Clean(got.Dir) != got.Dir || !hostgit.Printable(got.Dir) || path.Base(got.Dir) != box:
		return Received{}, fmt.Errorf("it names %s as the project's directory", hostgit.SafeText(got.Dir, 120))
	case got.NewCommits < 0:
		return Received{}, fmt.Errorf("it counts %d new commits", got.NewCommits)
	}
	return got, nil
}

func commitCount(n int) string {
	if n == 1 {
		return "1 new commit"
	}
	return fmt.Sprintf("%d new commits", n)
}

// PullFrom is this machine's end of `corral --host NAME pull`: it brings
// box's commits from host h into the repository at dir as
// refs/remotes/corral/<box>/*. The host's corral pulls them from its box
// first (its own pull, Service.PullBundle), then sends its copy of the
// box's branches as a branch stream, leaving out what this repository
// has; this side takes it as a local pull takes a box's bundle
// (takeBundle): the host is as untrusted here as a box. The version check
// is the caller's.
func (r Remote) PullFrom(ctx context.Context, h remote.Host, box, dir string, opt PullOptions) (hostgit.Result, error) {
	what := fmt.Sprintf("pulling from box %s on host %s", box, h.Name)
	if err := project.CheckName(box, r.Layout.LimaHome()); err != nil {
		return hostgit.Result{}, fmt.Errorf("%s: %w", what, err)
	}
	repo, err := hostgit.Open(dir)
	if err != nil {
		return hostgit.Result{}, fmt.Errorf("%s: %w", what, err)
	}
	haves, err := repo.Haves(ctx, box)
	if err != nil {
		return hostgit.Result{}, fmt.Errorf("%s: %w", what, err)
	}
	if err := os.MkdirAll(r.Layout.RunDir(), atomicfile.DirMode); err != nil {
		return hostgit.Result{}, err
	}
	max := opt.MaxBundle
	if max <= 0 {
		max = hostgit.DefaultMaxBundle
	}
	args := []string{"project", "pull-bundle", box}
	if opt.AllowSubmodules {
		args = append(args, "--allow-submodules")
	}
	ctx, cancel := context.WithTimeout(ctx, transferTimeout)
	defer cancel()
	var heads hostgit.Heads
	var b hostgit.Bundle
	err = r.Runner.Transfer(ctx, h, args, func(in io.WriteCloser, out io.Reader) error {
		if err := hostgit.WriteHaves(in, haves); err != nil {
			return err
		}
		_ = in.Close()
		br := bufio.NewReaderSize(out, 64<<10)
		var err error
		if heads, err = hostgit.ReadBranchList(br); err != nil {
			return err
		}
		b, err = hostgit.ReceiveBundle(br, r.Layout.RunDir(), max)
		return err
	})
	if b.Path != "" {
		defer os.Remove(b.Path)
	}
	if err != nil {
		return hostgit.Result{}, fmt.Errorf("%s: %w", what, err)
	}
	return takeBundle(ctx, r.audit, repo, b, heads, intake{
		box: box, kind: audit.KindPull, what: what,
		submoduleHint: fmt.Sprintf("review those commits; to take them anyway, knowing this machine's git will run what they bring: corral --host %s pull --allow-submodules %s", h.Name, box),
		fields:        map[string]any{"host": h.Name},
		opt:           hostgit.FetchOptions{AllowSubmodules: opt.AllowSubmodules, Limits: opt.Limits},
	})
}

// PullBundle is the host's end of PullFrom, after its own pull from the
// box (the CLI's, which starts a stopped box as corral pull does): it
// reads the haves the other machine sends on in, then writes the box's
// branches as this host's repository has them (refs/remotes/corral/<box>/*,
// each sent as refs/heads/<branch>) to out as a branch stream, leaving out
// the history of those haves.
func (s *Service) PullBundle(ctx context.Context, box string, haves []string, out io.Writer) error {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return err
	}
	repo, err := hostgit.Open(m.Project)
	if err != nil {
		return fmt.Errorf("sending the branches of box %s: %w", box, err)
	}
	prefix := hostgit.RemotePrefix(box)
	tips, err := repo.Tips(ctx, prefix)
	if err != nil {
		return err
	}
	if len(tips) == 0 {
		return fmt.Errorf("sending the branches of box %s: the box has no branch", box)
	}
	heads := hostgit.Heads{}
	for ref, oid := range tips {
		heads["refs/heads/"+strings.TrimPrefix(ref, prefix)] = oid
	}
	if err := os.MkdirAll(s.Layout.RunDir(), atomicfile.DirMode); err != nil {
		return err
	}
	if err := repo.WriteBranches(ctx, out, heads, haves, s.Layout.RunDir()); err != nil {
		return fmt.Errorf("sending the branches of box %s: %w", box, err)
	}
	return nil
}
