package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/hostgit"
	"github.com/corral-dev/corral/core/remote"
	"github.com/spf13/cobra"
)

// pullService is what `corral pull` needs of the lifecycle service.
type pullService interface {
	Pull(ctx context.Context, box string, opt box.PullOptions) (hostgit.Result, error)
	Start(ctx context.Context, box string) error
}

var _ pullService = (*box.Service)(nil)

// PullOptions are the options of `corral pull`.
type PullOptions struct {
	IO      *IOStreams
	Factory *Factory
	Service func() (pullService, error)
	Box     string
	JSON    bool
	// AllowSubmodules is --allow-submodules.
	AllowSubmodules bool
}

// NewCmdPull builds `corral pull`.
func NewCmdPull(f *Factory, runF func(*PullOptions) error) *cobra.Command {
	opts := &PullOptions{IO: f.IO, Factory: f, Service: func() (pullService, error) { return f.Service() }}
	cmd := &cobra.Command{
		Use:   "pull [BOX]",
		Short: "Fetch the commits made in a box into the host repository, for review",
		Long: `Pull fetches the branches of the box's repository (its git shadow, or its
own clone with source = "clone") into the host repository as
refs/remotes/corral/<box>/<branch>, and lists the commits that arrived.
It changes no local branch, no config and no hook: review, then merge.

The box writes a git bundle; the host caps its size, checks every branch
name and object (git fsck), bounds what git may spend on it (objects,
sizes, memory, time), and fetches it with its own git settings only,
hooks off. Nothing the box wrote runs on the host.

Commits that add or change a submodule (a gitlink, .gitmodules) or a .git
entry are refused, naming the branches and paths, and nothing is taken:
once merged, the host's git would enter that repository and run its
config (core.fsmonitor on git status) and hooks. --allow-submodules takes
them anyway and lists the paths; use it only for submodules you trust.

With --host NAME (or the project's host key) the box is on that host: its
corral pulls from the box as above, then sends its copy of the box's
branches over ssh, and this machine checks and fetches them the same way
into this repository (-C is a path here). Nothing the host sends is
trusted more than a box's bundle.`,
		Example: `  corral pull
  git log -p main..corral/web-3f2a1c/main
  git merge corral/web-3f2a1c/main
  corral pull --allow-submodules web-3f2a1c
  corral --host gpu pull`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return pullRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print what arrived as JSON")
	cmd.Flags().BoolVar(&opts.AllowSubmodules, "allow-submodules", false,
		"take commits that add or change submodules or .git entries: after a merge the host's git runs those repositories' config and hooks (code from the box runs on the host)")
	return cmd
}

func pullRun(opts *PullOptions) error {
	if h := opts.Factory.remoteHost; h != nil {
		return pullRemoteRun(opts, *h)
	}
	name := opts.Box
	if name == "" {
		b, err := boxArg(opts.Factory, nil)
		if err != nil {
			return err
		}
		name = b
	}
	s, err := opts.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	res, err := pullBox(ctx, s, name, box.PullOptions{AllowSubmodules: opts.AllowSubmodules}, opts.IO.ErrOut)
	if err != nil {
		return err
	}
	return printPull(opts, name, res)
}

// pullBox is corral's pull from a box of this machine, starting it when it
// is not running: `corral pull`, and the host's own pull before it sends
// the box's commits to another machine (corral project pull-bundle).
func pullBox(ctx context.Context, s pullService, name string, popt box.PullOptions, errOut io.Writer) (hostgit.Result, error) {
	res, err := s.Pull(ctx, name, popt)
	if errors.Is(err, box.ErrNotRunning) {
		fmt.Fprintf(errOut, "starting box %s to pull from it\n", name)
		if err := s.Start(ctx, name); err != nil {
			return res, err
		}
		res, err = s.Pull(ctx, name, popt)
	}
	return res, err
}

// pullRemoteRun is `corral --host NAME pull [BOX]`: the box on host h (the
// one named, else this project's), its commits brought into this
// project's repository (-C is a path here: the repository is this
// machine's).
func pullRemoteRun(opts *PullOptions, h remote.Host) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	p, err := boxmeta.ResolveProject(l, f.Dir)
	if err != nil {
		return err
	}
	name := opts.Box
	if name == "" {
		name = p.Box
	}
	// This machine's repository first: nothing to pull into, no ssh.
	if _, err := hostgit.Open(p.Dir); err != nil {
		return fmt.Errorf("pulling from box %s on host %s: %w", name, h.Name, err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	if err := f.Remote.CheckVersion(ctx, h); err != nil {
		return err
	}
	res, err := f.remoteMover(l).PullFrom(ctx, h, name, p.Dir, box.PullOptions{AllowSubmodules: opts.AllowSubmodules})
	if err != nil {
		return err
	}
	return printPull(opts, name, res)
}

func printPull(opts *PullOptions, name string, res hostgit.Result) error {
	if opts.JSON {
		return writeJSON(opts.IO.Out, pullJSON(name, res))
	}
	renderPull(opts.IO.Out, name, res)
	return nil
}

type pullUpdateJSON struct {
	Branch string `json:"branch"`
	Ref    string `json:"ref"`
	Old    string `json:"old,omitempty"`
	New    string `json:"new,omitempty"`
}

type pullSubmoduleJSON struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"`
	Commit string `json:"commit"`
}

type pullResultJSON struct {
	Box        string              `json:"box"`
	Updates    []pullUpdateJSON    `json:"updates"`
	NewCommits int                 `json:"new_commits"`
	Commits    []string            `json:"commits"`
	Submodules []pullSubmoduleJSON `json:"submodules"`
}

func pullJSON(name string, res hostgit.Result) pullResultJSON {
	out := pullResultJSON{Box: name, NewCommits: res.NewCommits, Updates: []pullUpdateJSON{}, Commits: res.Commits, Submodules: []pullSubmoduleJSON{}}
	if out.Commits == nil {
		out.Commits = []string{}
	}
	for _, c := range res.Submodules {
		out.Submodules = append(out.Submodules, pullSubmoduleJSON{Path: c.Path, Kind: string(c.Kind), Commit: c.Commit})
	}
	for _, u := range res.Updates {
		out.Updates = append(out.Updates, pullUpdateJSON{Branch: u.Branch, Ref: hostgit.RemotePrefix(name) + u.Branch, Old: u.Old, New: u.New})
	}
	return out
}

func writeJSON(w io.Writer, v any) error {
	return printJSON(w, SchemaPull, v)
}

// renderPull prints what arrived. Branch names passed hostgit's checks
// (valid, printable); commit lines were made safe by hostgit.
func renderPull(w io.Writer, name string, res hostgit.Result) {
	if len(res.Updates) == 0 {
		fmt.Fprintf(w, "box %s: nothing new\n", name)
		return
	}
	fmt.Fprintf(w, "from box %s into refs/remotes/corral/%s/:\n", name, name)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, u := range res.Updates {
		switch {
		case u.Old == "":
			fmt.Fprintf(tw, "  %s\tnew\t%s\n", u.Branch, short(u.New))
		case u.New == "":
			fmt.Fprintf(tw, "  %s\tdeleted\t(was %s)\n", u.Branch, short(u.Old))
		default:
			fmt.Fprintf(tw, "  %s\tupdated\t%s..%s\n", u.Branch, short(u.Old), short(u.New))
		}
	}
	_ = tw.Flush()
	switch res.NewCommits {
	case 0:
		fmt.Fprintln(w, "no new commits")
	case 1:
		fmt.Fprintln(w, "1 new commit:")
	default:
		fmt.Fprintf(w, "%d new commits:\n", res.NewCommits)
	}
	for _, c := range res.Commits {
		fmt.Fprintf(w, "  %s\n", c)
	}
	if more := res.NewCommits - len(res.Commits); more > 0 {
		fmt.Fprintf(w, "  … %d more\n", more)
	}
	if len(res.Submodules) > 0 {
		// Paths were made safe by hostgit; branch names passed its checks.
		fmt.Fprintf(w, "submodules and .git entries taken with --allow-submodules (on %s); the host's git will enter these once merged:\n",
			strings.Join(res.SubmoduleBranches, ", "))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range res.Submodules {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Path, c.Kind, short(c.Commit))
		}
		_ = tw.Flush()
	}
	for _, u := range res.Updates {
		if u.New != "" {
			ref := "corral/" + name + "/" + u.Branch
			fmt.Fprintf(w, "review: git log -p HEAD..%s\nmerge:  git merge %s\n", ref, ref)
			break
		}
	}
}

func short(oid string) string {
	if len(oid) > 10 {
		return oid[:10]
	}
	return oid
}
