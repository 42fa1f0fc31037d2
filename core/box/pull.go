package box

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/guest"
)

// PullOptions tune Pull.
type PullOptions struct {
	// MaxBundle caps what the box may send; 0 = hostgit.DefaultMaxBundle.
	MaxBundle int64
	// AllowSubmodules takes commits that add or change a submodule
	// (gitlink, .gitmodules) or a .git entry, which Pull refuses otherwise:
	// once merged, the host's git enters those repositories and runs their
	// config and hooks. Only the user's explicit `corral pull
	// --allow-submodules` sets it.
	AllowSubmodules bool
	// Limits bound the host's fetch; zero fields are hostgit.DefaultLimits'.
	Limits hostgit.Limits
}

// ErrNotRunning means an operation needs the box running.
var ErrNotRunning = errors.New("box is not running")

// Pull fetches the branches of a running box's repository (the git shadow
// or its clone, at the project path in the guest) into the host
// repository as refs/remotes/corral/<box>/*. The box writes a git bundle
// to ssh's stdout; the host caps and checks it (hostgit.ReceiveBundle) and
// fetches it with hardened git, bounded, through a quarantine that
// refuses submodules unless opt.AllowSubmodules (hostgit.Repo.Fetch).
// Nothing from the box runs on the host or lands in its config, hooks or
// local branches.
func (s *Service) Pull(ctx context.Context, box string, opt PullOptions) (hostgit.Result, error) {
	m, repo, err := s.pullTarget(box)
	if err != nil {
		return hostgit.Result{}, err
	}
	haves, err := repo.Haves(ctx, box)
	if err != nil {
		return hostgit.Result{}, err
	}
	max := opt.MaxBundle
	if max <= 0 {
		max = hostgit.DefaultMaxBundle
	}
	// The branch list first, then the bundle: Fetch refuses the pair if
	// the box moved a branch in between.
	var heads hostgit.Heads
	err = s.guestRepo(ctx, box, "heads", m.Project, nil, func(out io.Reader) error {
		var err error
		heads, err = hostgit.ParseHeads(out)
		return err
	})
	if err != nil {
		return hostgit.Result{}, fmt.Errorf("pulling from box %s: %w", box, err)
	}
	var b hostgit.Bundle
	err = s.guestRepo(ctx, box, "bundle", m.Project, haves, func(out io.Reader) error {
		var err error
		b, err = hostgit.ReceiveBundle(out, s.Layout.RunDir(), max)
		return err
	})
	if b.Path != "" {
		defer os.Remove(b.Path)
	}
	if err != nil {
		return hostgit.Result{}, fmt.Errorf("pulling from box %s: %w", box, err)
	}
	res, err := takeBundle(ctx, s.audit, repo, b, heads, intake{
		box: box, kind: audit.KindPull, what: "pulling from box " + box,
		submoduleHint: fmt.Sprintf("review those commits in the box; to take them anyway, knowing the host's git will run what they bring: corral pull --allow-submodules %s", box),
		opt:           hostgit.FetchOptions{AllowSubmodules: opt.AllowSubmodules, Limits: opt.Limits},
	})
	if err != nil {
		return res, err
	}
	s.reportNested(m, "pull")
	return res, nil
}

// NewCommits counts the commits on the box's branches that the host has
// neither on its branches nor pulled from this box, for the menu's "Pull N
// new commits". It asks the running box over ssh.
func (s *Service) NewCommits(ctx context.Context, box string) (int, error) {
	m, repo, err := s.pullTarget(box)
	if err != nil {
		return 0, err
	}
	haves, err := repo.Haves(ctx, box)
	if err != nil {
		return 0, err
	}
	n := -1
	err = s.guestRepo(ctx, box, "count", m.Project, haves, func(out io.Reader) error {
		b, err := io.ReadAll(io.LimitReader(out, 32))
		if err != nil {
			return err
		}
		n, err = strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n < 0 {
			return fmt.Errorf("the box answered %q, not a count", display.Text(string(b), 32))
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("counting new commits in box %s: %w", box, err)
	}
	return n, nil
}

// pullTarget is a running box and its project's host repository.
func (s *Service) pullTarget(box string) (boxmeta.Meta, hostgit.Repo, error) {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return boxmeta.Meta{}, hostgit.Repo{}, err
	}
	if st, err := lima.ReadInstanceDir(s.Layout.LimaHome(), box); err != nil || st.Status != lima.StatusRunning {
		return m, hostgit.Repo{}, hint.New(fmt.Errorf("%w: %s", ErrNotRunning, box), fmt.Sprintf("corral start %s", box))
	}
	repo, err := hostgit.Open(m.Project)
	if err != nil {
		return m, repo, fmt.Errorf("pulling from box %s: %w", box, err)
	}
	return m, repo, nil
}

// guestStderrCap caps what the guest's stderr may put into an error.
const guestStderrCap = 4 << 10

// guestRepo runs corral-repo OP DIR HAVES... in the box as the box user
// and hands its stdout to read. The arguments are quoted for the remote
// shell; HAVES are hex object names.
func (s *Service) guestRepo(ctx context.Context, box, op, dir string, haves []string, read func(io.Reader) error) error {
	argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{})
	if err != nil {
		return err
	}
	remote := []string{guest.RepoPath, op, shellQuote(dir)}
	for _, h := range haves {
		if hostgit.ValidOID(h) {
			remote = append(remote, h)
		}
	}
	argv = append(argv, "-o", "LogLevel=ERROR", "-T", "--", strings.Join(remote, " "))
	ctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	cmd := s.guestCmd(ctx, argv, nil)
	// Once ctx is done, Wait gives the pipes this long, then closes them:
	// nothing left writing (a grandchild of a test's sh) can hold it.
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &capWriter{w: &stderr, left: guestStderrCap}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("running ssh for box %s: %w", box, err)
	}
	if rerr := read(out); rerr != nil {
		// A refused stream (over the cap, malformed) is not drained: a
		// box could send forever.
		cancel()
		_ = out.Close()
		_ = cmd.Wait()
		return rerr
	}
	// Trailing output is drained up to a bound; past it, closing the pipe
	// ends ssh instead of leaving Wait blocked on a writer.
	_, _ = io.Copy(io.Discard, io.LimitReader(out, 1<<20))
	_ = out.Close()
	werr := cmd.Wait()
	if werr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			return fmt.Errorf("the box's %s failed: %s", op, display.Text(msg, 200))
		}
		return fmt.Errorf("the box's %s failed: %w", op, werr)
	}
	return nil
}

// capWriter keeps at most left bytes and drops the rest.
type capWriter struct {
	w    io.Writer
	left int
}

func (c *capWriter) Write(p []byte) (int, error) {
	n := len(p)
	if c.left <= 0 {
		return n, nil
	}
	if len(p) > c.left {
		p = p[:c.left]
	}
	c.left -= len(p)
	_, err := c.w.Write(p)
	return n, err
}
