package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/spf13/cobra"
)

// ApproveOptions are the options of `corral approve`.
type ApproveOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
	Yes     bool
	now     func() time.Time
}

// NewCmdApprove builds `corral approve`.
func NewCmdApprove(f *Factory, runF func(*ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{IO: f.IO, Factory: f, now: time.Now}
	cmd := &cobra.Command{
		Use:   "approve [BOX]",
		Short: "Review and allow the hosts and ports a repository's .corral.toml requests",
		Long: `Approve shows each host (egress), egress group (egress_groups) and
forwarded port (ports) the
repository's .corral.toml requests and writes the ones you accept to the
box's trusted layer (~/.corral/projects/<box>.toml), with a comment naming the repository file's
content hash. A request is never a permission by itself: until it is
approved the broker does not allow it. When the file changes, new requests
are pending again; approved entries stay.

On a terminal it asks for each entry; --yes approves them all.`,
		Example: `  corral approve
  corral approve web-3f2a1c --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return approveRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve every pending request without asking")
	return cmd
}

func approveRun(opts *ApproveOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	dir := f.Dir
	if opts.Box != "" {
		// A box that was created knows its project; a box not created yet
		// is the current project's, if the name matches.
		if m, err := box.ReadMeta(l, opts.Box); err == nil {
			dir = m.Project
		} else if cur, _ := box.Resolve(l, box.ResolveOptions{Dir: f.Dir, Platform: f.Platform}); cur.Project.Box != opts.Box {
			return err
		}
	}
	r, err := box.Resolve(l, box.ResolveOptions{Dir: dir, Platform: f.Platform})
	if r.Project.Box == "" {
		return err
	}
	if err != nil {
		// Requests are answered only for a file that passes the trust
		// check otherwise: approving hosts for a file that is refused
		// would be a promise corral does not keep.
		return err
	}
	pending := r.Loaded.Pending()
	if len(pending) == 0 {
		fmt.Fprintf(opts.IO.Out, "box %s: no pending requests\n", r.Project.Box)
		return nil
	}
	if !opts.Yes && !opts.IO.InTTY {
		return hint.New(fmt.Errorf("approve: %d pending request(s) and no terminal to ask", len(pending)),
			fmt.Sprintf("review them with corral config check, then corral approve %s --yes", r.Project.Box))
	}
	in := bufio.NewReader(opts.IO.In)
	var accepted, hosts, groups, ports []string
	for _, q := range pending {
		line := fmt.Sprintf("%s %s", q.Key, display.Authority(q.Entry, 0))
		if q.Key == "egress_groups" {
			line = fmt.Sprintf("the egress group %s (corral egress groups lists its hosts)", display.Text(q.Entry, 0))
		}
		if q.Key == "ports" {
			line = fmt.Sprintf("ports %s (a guest port forwarded to the host's 127.0.0.1)", display.Text(q.Entry, 0))
		}
		ok := opts.Yes
		if opts.Yes {
			fmt.Fprintf(opts.IO.Out, "approving %s\n", line)
		} else {
			fmt.Fprintf(opts.IO.Out, "box %s: the repository requests %s; allow it? [y/N] ", r.Project.Box, line)
			answer, _ := in.ReadString('\n')
			a := strings.ToLower(strings.TrimSpace(answer))
			ok = a == "y" || a == "yes"
		}
		if !ok {
			continue
		}
		accepted = append(accepted, q.Entry)
		switch q.Key {
		case "egress_groups":
			groups = append(groups, q.Entry)
		case "ports":
			ports = append(ports, q.Entry)
		default:
			hosts = append(hosts, q.Entry)
		}
	}
	if len(accepted) == 0 {
		fmt.Fprintln(opts.IO.Out, "nothing approved")
		return nil
	}
	trusted := l.ProjectConfig(r.Project.Box)
	// The audit record comes first: if it cannot be written, nothing is
	// approved.
	alog, err := audit.Open(l.AuditLog())
	if err != nil {
		return err
	}
	err = alog.Record(audit.Event{Kind: audit.KindAllow, Box: r.Project.Box, Actor: audit.ActorCLI,
		Fields: map[string]any{"entries": accepted, "scope": "trusted", "request": r.Loaded.ProjectHash}})
	if err = errors.Join(err, alog.Close()); err != nil {
		return fmt.Errorf("approve: recording the approval in the audit log (nothing was approved): %w", err)
	}
	file := ""
	if len(pending) > 0 {
		file = pending[0].File
	}
	if len(hosts) > 0 {
		if err := config.ApproveEgress(trusted, hosts, file, r.Loaded.ProjectHash, opts.now()); err != nil {
			return err
		}
	}
	if len(groups) > 0 {
		if err := config.ApproveGroups(trusted, groups, file, r.Loaded.ProjectHash, opts.now()); err != nil {
			return err
		}
	}
	if len(ports) > 0 {
		if err := config.AddToList(trusted, "ports", ports, fmt.Sprintf("requested by %s (%s)", file, r.Loaded.ProjectHash), "corral approve", opts.now()); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.IO.Out, "approved %d of %d; written to %s\n", len(accepted), len(pending), trusted)
	return nil
}
