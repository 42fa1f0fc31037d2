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
	// YesFlagged also approves flagged entries without asking (--yes
	// alone asks about each on a terminal and leaves it pending elsewhere).
	YesFlagged bool
	now        func() time.Time
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
passes without a flag, and asks about each flagged one on a terminal
(elsewhere it stays pending); --yes-flagged approves flagged ones too.
KEY=ENTRY arguments (such as egress=api.example.test or ports=3000) narrow
it to those requests.

Exit status: 0 when nothing refused is left; 2 when the repository requests
an entry the grant check refuses (it can never be approved: the box runs
without it).`,
		Example: `  corral approve
  corral approve web-3f2a1c --yes
  corral approve web-3f2a1c --yes egress=api.example.test ports=3000
  corral approve web-3f2a1c --yes-flagged egress=db.example.test:*`,
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
			if opts.YesFlagged {
				opts.Yes = true
			}
			if runF != nil {
				return runF(opts)
			}
			return approveRun(opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Yes, "yes", "y", false, "approve every pending request the grant check passes without a flag, without asking")
	cmd.Flags().BoolVar(&opts.YesFlagged, "yes-flagged", false, "with --yes (implied), approve flagged requests too, without asking")
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

// approveRun asks, writes what was accepted, and ends with the refusals:
// a refused request is a verdict (exit 2), never a pending item.
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
	name, open, refused := q.Box, q.Pending, q.Refused()
	if len(open) == 0 {
		fmt.Fprintf(opts.IO.Out, "box %s: no pending requests\n", name)
		return nil
	}
	var grantable, flagged []string
	for _, j := range open {
		switch {
		case j.Refused():
		case j.V.Risk == config.RiskFlagged:
			flagged = append(flagged, shellArg(j.Selector()))
			grantable = append(grantable, shellArg(j.Selector()))
		default:
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
	pending := len(open) - len(refused)
	if !opts.Yes && !opts.IO.InTTY {
		err := fmt.Errorf("approve: %d pending request(s) and no terminal to ask%s", pending, refusedText())
		yes := "--yes"
		if len(flagged) > 0 {
			yes = "--yes-flagged"
		}
		switch {
		case len(grantable) == 0:
			return &refusedError{err: hint.New(fmt.Errorf("approve: box %s: %d request(s) refused by the grant check, none approvable%s", name, len(refused), refusedText()),
				"they can never be approved; ask the repository to change its .corral.toml")}
		case len(refused) == 0 && len(opts.Only) == 0:
			return hint.New(err, fmt.Sprintf("review them with corral config check, then corral approve %s %s", name, yes))
		}
		return hint.New(err, fmt.Sprintf("review them with corral config check; to approve the ones that can be: corral approve %s %s %s", name, yes, strings.Join(grantable, " ")))
	}
	in := bufio.NewReader(opts.IO.In)
	var accepted []box.Judged
	var left []string
	for _, j := range open {
		line := j.Describe()
		if j.Refused() {
			fmt.Fprintf(opts.IO.Out, "box %s: the repository requests %s: refused, can never be approved: %s\n", name, line, display.Text(j.V.Why, maxLine))
			continue
		}
		isFlagged := j.V.Risk == config.RiskFlagged
		if isFlagged {
			line += "\n  flagged: " + display.Text(j.V.Why, maxLine)
		}
		var ok bool
		switch {
		case opts.Yes && (!isFlagged || opts.YesFlagged):
			ok = true
			fmt.Fprintf(opts.IO.Out, "approving %s\n", line)
		case opts.Yes && !opts.IO.InTTY:
			// --yes never writes a flagged entry: that takes --yes-flagged
			// or a person's answer.
			left = append(left, shellArg(j.Selector()))
			fmt.Fprintf(opts.IO.Out, "not approved, flagged: %s\n", line)
		default:
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
		fmt.Fprintf(opts.IO.Out, "approved %d of %d; written to %s\n", len(accepted), pending, q.Resolved.Loaded.TrustedPath())
	} else {
		fmt.Fprintln(opts.IO.Out, "nothing approved")
	}
	if len(left) > 0 {
		fmt.Fprintf(opts.IO.Out, "%d flagged request(s) left pending; to approve them: corral approve %s --yes-flagged %s\n", len(left), name, strings.Join(left, " "))
	}
	if len(refused) > 0 {
		return &refusedError{err: fmt.Errorf("approve: %d request(s) of box %s refused by the grant check, can never be approved:%s", len(refused), name, refusedText())}
	}
	return nil
}

// refusedError is a refusal verdict: it exits with ExitViolation.
type refusedError struct{ err error }

func (e *refusedError) Error() string   { return e.err.Error() }
func (e *refusedError) Unwrap() error   { return e.err }
func (e *refusedError) ExitCode() int   { return ExitViolation }
func (e *refusedError) Code() ErrorCode { return CodeRefused }
