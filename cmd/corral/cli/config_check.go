package cli

import (
	"encoding/json"
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
repository's .corral.toml may not set. It exits 2 on any violation.`,
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
		where := display.Text(q.File, maxLine)
		if q.Line > 0 {
			where += ":" + strconv.Itoa(q.Line)
		}
		fmt.Fprintf(io.Out, "  %s %s  (%s)\n", q.Key, display.Authority(q.Entry, 0), where)
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
	var problems []checkProblem
	for _, e := range violations(err) {
		var v *config.Violation
		var pe *config.ParseError
		switch {
		case errors.As(e, &v):
			problems = append(problems, checkProblem{File: v.File, Line: v.Line, Key: v.Key, Value: v.Value, Reason: v.Reason, Fix: v.Fix})
		case errors.As(e, &pe):
			problems = append(problems, checkProblem{File: pe.File, Line: pe.Line, Reason: pe.Err.Error()})
		default:
			problems = append(problems, checkProblem{Reason: e.Error()})
		}
	}
	if opts.JSON {
		if problems == nil {
			problems = []checkProblem{}
		}
		enc := json.NewEncoder(dataOut(opts.IO.Out))
		enc.SetIndent("", "  ")
		requests := r.Loaded.Pending()
		if requests == nil {
			requests = []config.RepoRequest{}
		}
		ignored := r.Loaded.Ignored()
		if ignored == nil {
			ignored = []config.IgnoredEntry{}
		}
		if err := enc.Encode(map[string]any{"box": r.Project.Box, "ok": len(problems) == 0, "problems": problems, "requests": requests, "ignored": ignored}); err != nil {
			return err
		}
	} else {
		if len(problems) == 0 {
			fmt.Fprintf(opts.IO.Out, "ok: box %s config has no problems\n", r.Project.Box)
		} else {
			fmt.Fprintf(opts.IO.Out, "%d problem(s) in the config of box %s:\n", len(problems), r.Project.Box)
			for _, p := range problems {
				fmt.Fprintf(opts.IO.Out, "\n%s\n", p.text())
			}
		}
		printRequests(opts.IO, r.Project.Box, r.Loaded.Pending())
		printIgnored(opts.IO, r.Loaded.Ignored())
	}
	if len(problems) > 0 {
		return &ExitCodeError{Code: ExitViolation}
	}
	return nil
}
