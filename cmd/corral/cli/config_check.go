package cli

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/spf13/cobra"
)

// ConfigCheckOptions are the options of `corral config check`.
type ConfigCheckOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
}

// NewCmdConfigCheck builds `corral config check`.
func NewCmdConfigCheck(f *Factory, runF func(*ConfigCheckOptions) error) *cobra.Command {
	opts := &ConfigCheckOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a project's config and its .corral.toml against the trust policy",
		Long: `Check loads every config layer of a project and reports all problems at
once: malformed files, invalid values, unknown keys, and every key the
repository's .corral.toml may not set, each with the lines to copy into
your trusted layer (~/.corral/projects/<box>.toml) if you trust the
repository, or why no layer of yours can grant it. It lists the requests
(hosts, ports, toolchains, packages) waiting for corral approve, and the
ones the grant check refuses, which can never be approved.

Exit status: 0 when the config has no problem and nothing it requests is
refused; 2 otherwise (a refused request does not stop the box: it runs
without it).`,
		Example: "  corral config check -C ~/src/untrusted",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return configCheckRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

type checkProblem struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  string `json:"value,omitempty"`
	Reason string `json:"reason"`
	Fix    string `json:"fix,omitempty"`
	// Lines are what to copy into the trusted layer (the fix says where);
	// Never: no layer of the user's can grant it.
	Lines string `json:"lines,omitempty"`
	Never bool   `json:"never,omitempty"`
}

// problemsOf lists every problem of a config error, in order.
func problemsOf(err error) []checkProblem {
	var problems []checkProblem
	for _, e := range violations(err) {
		var v *config.Violation
		var pe *config.ParseError
		switch {
		case errors.As(e, &v):
			problems = append(problems, checkProblem{File: v.File, Line: v.Line, Key: v.Key, Value: v.Value, Reason: v.Reason, Fix: v.Fix, Lines: v.Lines, Never: v.Never})
		case errors.As(e, &pe):
			problems = append(problems, checkProblem{File: pe.File, Line: pe.Line, Reason: pe.Err.Error()})
		default:
			problems = append(problems, checkProblem{Reason: e.Error()})
		}
	}
	return problems
}

// text renders a problem for a terminal as config.Violation does, with
// every field sanitised: keys, values and reasons can carry a repository's
// text, and an escape sequence there could rewrite what the user sees
// (a forged "ok" line over the real problems).
func (p checkProblem) text() string {
	var b strings.Builder
	b.WriteString(display.Text(p.File, maxLine))
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
	}
	if p.Key != "" {
		b.WriteString(": " + display.Text(p.Key, maxLine))
		if p.Value != "" {
			b.WriteString(" = " + display.Text(p.Value, maxLine))
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(display.Text(p.Reason, maxLine))
	if p.Fix != "" {
		for i, line := range strings.Split(p.Fix, "\n") {
			if i == 0 {
				b.WriteString("\n  fix: " + display.Text(line, maxLine))
			} else {
				b.WriteString("\n       " + display.Text(line, maxLine))
			}
		}
	}
	return b.String()
}

// printRequests says what the repository asks for and how to allow it. A
// request is not a problem: the check passes, and nothing is allowed
// until the user approves.
func printRequests(io *IOStreams, boxName string, pending []config.RepoRequest) {
	if len(pending) == 0 {
		return
	}
	fmt.Fprintf(io.Out, "\nnotice: the repository requests %d host(s), group(s) or port(s) for box %s; they are not allowed until you approve them:\n", len(pending), boxName)
	for _, q := range pending {
		fmt.Fprintf(io.Out, "  %s %s  (%s)\n", q.Key, display.Authority(q.Entry, 0), requestWhere(q))
	}
	if slices.ContainsFunc(pending, func(q config.RepoRequest) bool { return q.Key == "toolchains" || q.Key == "packages" }) {
		fmt.Fprintln(io.Out, "until approved, the golden image is built without the requested toolchains and packages")
	}
	fmt.Fprintf(io.Out, "to review and allow them: corral approve %s\n", boxName)
}

// printIgnored reports the entries of trusted layers the grant check
// refuses (written by hand: corral never writes one). They are not
// problems of the file, and the broker ignores them.
func printIgnored(io *IOStreams, ignored []config.IgnoredEntry) {
	if len(ignored) == 0 {
		return
	}
	fmt.Fprintf(io.Out, "\nwarning: %d allow-list entr(ies) refused by the grant check; the broker ignores them:\n", len(ignored))
	for _, e := range ignored {
		fmt.Fprintf(io.Out, "  %s: %s %s: %s\n", display.Text(e.File, maxLine), e.Key, display.Authority(e.Entry, 0), display.Text(e.Why, maxLine))
	}
	fmt.Fprintln(io.Out, `remove them, or use network = "full" to turn the filter off`)
}

// maxLine caps one line of repository-derived text in terminal output.
const maxLine = 1000

func configCheckRun(opts *ConfigCheckOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: f.Dir, Platform: f.Platform})
	if r.Project.Box == "" {
		return err
	}
	if err != nil && !errors.Is(err, config.ErrViolation) {
		return err
	}
	problems := problemsOf(err)
	refused := r.Loaded.RefusedRequests()
	if opts.JSON {
		if err := printJSON(opts.IO.Out, SchemaConfigCheck, configCheckJSON(r.Project.Box, r.Loaded, problems)); err != nil {
			return err
		}
	} else {
		switch {
		case len(problems) > 0:
			fmt.Fprintf(opts.IO.Out, "%d problem(s) in the config of box %s:\n", len(problems), r.Project.Box)
			for _, p := range problems {
				fmt.Fprintf(opts.IO.Out, "\n%s\n", p.text())
			}
		case len(refused) == 0:
			fmt.Fprintf(opts.IO.Out, "ok: box %s config has no problems\n", r.Project.Box)
		default:
			fmt.Fprintf(opts.IO.Out, "box %s: the config has no problems, but its repository requests what can never be granted\n", r.Project.Box)
		}
		printRefused(opts.IO, r.Project.Box, refused)
		printRequests(opts.IO, r.Project.Box, r.Loaded.Pending())
		printIgnored(opts.IO, r.Loaded.Ignored())
	}
	if len(problems) > 0 || len(refused) > 0 {
		return &ExitCodeError{Code: ExitViolation}
	}
	return nil
}

// configCheckJSON is the document of config check --json (and the problems
// half of config show --json): ok only when nothing is wrong and nothing
// the repository requests is refused; requests lists every request not
// granted yet, each with its status (pending or refused) and the grant
// check's reason.
func configCheckJSON(boxName string, res config.Result, problems []checkProblem) map[string]any {
	if problems == nil {
		problems = []checkProblem{}
	}
	requests := []config.RepoRequest{}
	for _, q := range res.Requests {
		if q.Status != config.RequestGranted {
			requests = append(requests, q)
		}
	}
	ignored := res.Ignored()
	if ignored == nil {
		ignored = []config.IgnoredEntry{}
	}
	return map[string]any{"box": boxName, "ok": len(problems) == 0 && len(res.RefusedRequests()) == 0,
		"problems": problems, "requests": requests, "ignored": ignored}
}

// printRefused says which requests the grant check refuses: a verdict, not
// something to approve later.
func printRefused(io *IOStreams, boxName string, refused []config.RepoRequest) {
	if len(refused) == 0 {
		return
	}
	fmt.Fprintf(io.Out, "\nrefused: the repository requests %d entr(ies) the grant check refuses for box %s; they can never be approved, and the box runs without them:\n", len(refused), boxName)
	for _, q := range refused {
		fmt.Fprintf(io.Out, "  %s %s  (%s): %s\n", q.Key, display.Authority(q.Entry, 0), requestWhere(q), display.Text(q.Why, maxLine))
		if q.Fix != "" {
			fmt.Fprintf(io.Out, "    instead: %s\n", display.Text(q.Fix, maxLine))
		}
	}
	fmt.Fprintln(io.Out, "ask the repository to change its .corral.toml")
}

// requestWhere is a request's file:line, sanitised.
func requestWhere(q config.RepoRequest) string {
	where := display.Text(q.File, maxLine)
	if q.Line > 0 {
		where += ":" + strconv.Itoa(q.Line)
	}
	return where
}
