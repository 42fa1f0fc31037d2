package cli

import (
	"bufio"
	"fmt"
	"strings"
	"time"

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
	// Only, when set, are the requests to consider, as KEY=ENTRY.
	Only []string
	Yes  bool
	now  func() time.Time
}

// NewCmdApprove builds `corral approve`.
func NewCmdApprove(f *Factory, runF func(*ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{IO: f.IO, Factory: f, now: time.Now}
	cmd := &cobra.Command{
		Use:   "approve [BOX] [KEY=ENTRY...]",
		Short: "Review and allow the hosts, ports and toolchains a repository's .corral.toml requests",
		Long: `Approve shows each host (egress), egress group (egress_groups), forwarded
port (ports), toolchain (toolchains) and package (packages) the
repository's .corral.toml requests, with the grant check's verdict, and
writes the ones you accept to the box's trusted layer
(~/.corral/projects/<box>.toml), with a comment naming the repository
file's content hash. A request is never a permission by itself: until it
is approved the broker does not allow it, and the golden image is built
without the requested toolchains and packages. When the file changes, new
requests are pending again; approved entries stay.

Every entry goes through the one grant check corral allow, corral port and
corral egress learn use: refused entries (a wildcard over a public suffix
such as *.com, a catch-all or too wide range, the cloud metadata address,
a host port below 1024 without low_host_ports) are shown with the reason
and never written; flagged ones are shown with what they let the box
reach.

On a terminal it asks for each entry; --yes approves every entry the check
does not refuse. KEY=ENTRY arguments (such as egress=api.example.test or
ports=3000) narrow it to those requests.`,
		Example: `  corral approve
  corral approve web-3f2a1c --yes
  corral approve web-3f2a1c --yes egress=api.example.test ports=3000`,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, a := range args {
				if strings.Contains(a, "=") {
					opts.Only = append(opts.Only, a)
				} else if opts.Box == "" {
					opts.Box = a
				} else {
					return hint.New(fmt.Errorf("approve takes one box, got %q and %q", opts.Box, a), "name requests as KEY=ENTRY, such as egress=api.example.test")
				}
			}
			if runF != nil {
				return runF(opts)
			}
			return approveRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve every pending request the grant check does not refuse, without asking")
	return cmd
}

// shellArg quotes an argument for a printed command line. Only entries the
// grant check passed reach it (canonical, from a narrow alphabet without
// quotes); single quotes keep a '*' from the shell.
func shellArg(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:=/+-", r))
	}) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

func approveRun(opts *ApproveOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	q, err := box.ToApprove(l, f.Platform, opts.Box, f.Dir, opts.Only)
	if err != nil {
		return err
	}
	name, pending, refused := q.Box, q.Pending, q.Refused()
	if len(pending) == 0 {
		fmt.Fprintf(opts.IO.Out, "box %s: no pending requests\n", name)
		return nil
	}
	var grantable []string
	for _, j := range pending {
		if !j.Refused() {
			grantable = append(grantable, shellArg(j.Selector()))
		}
	}
	refusedText := func() string {
		var b strings.Builder
		for _, j := range refused {
			fmt.Fprintf(&b, "\n  refused: %s: %s", j.Describe(), display.Text(j.V.Why, maxLine))
		}
		return b.String()
	}
	if !opts.Yes && !opts.IO.InTTY {
		err := fmt.Errorf("approve: %d pending request(s) and no terminal to ask%s", len(pending), refusedText())
		switch {
		case len(grantable) == 0:
			return hint.New(err, "none of them can be approved; ask the repository to change its .corral.toml")
		case len(refused) == 0 && len(opts.Only) == 0:
			return hint.New(err, fmt.Sprintf("review them with corral config check, then corral approve %s --yes", name))
		}
		return hint.New(err, fmt.Sprintf("review them with corral config check; to approve the ones that can be: corral approve %s --yes %s", name, strings.Join(grantable, " ")))
	}
	in := bufio.NewReader(opts.IO.In)
	var accepted []box.Judged
	for _, j := range pending {
		line := j.Describe()
		if j.Refused() {
			fmt.Fprintf(opts.IO.Out, "box %s: the repository requests %s: refused, not approvable: %s\n", name, line, display.Text(j.V.Why, maxLine))
			continue
		}
		if j.V.Risk == config.RiskFlagged {
			line += "\n  flagged: " + display.Text(j.V.Why, maxLine)
		}
		ok := opts.Yes
		if opts.Yes {
			fmt.Fprintf(opts.IO.Out, "approving %s\n", line)
		} else {
			fmt.Fprintf(opts.IO.Out, "box %s: the repository requests %s\nallow it? [y/N] ", name, line)
			answer, _ := in.ReadString('\n')
			a := strings.ToLower(strings.TrimSpace(answer))
			ok = a == "y" || a == "yes"
		}
		if ok {
			accepted = append(accepted, j)
		}
	}
	if len(accepted) > 0 {
		if err := q.Approve(l, accepted, opts.now()); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "approved %d of %d; written to %s\n", len(accepted), len(pending), q.Resolved.Loaded.TrustedPath())
	} else {
		fmt.Fprintln(opts.IO.Out, "nothing approved")
	}
	if len(refused) > 0 {
		return fmt.Errorf("approve: %d request(s) of box %s refused by the grant check, not written:%s", len(refused), name, refusedText())
	}
	return nil
}
