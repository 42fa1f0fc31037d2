package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/version"
	"github.com/spf13/cobra"
)

// EgressOptions are the options of `corral egress`.
type EgressOptions struct {
	IO      *IOStreams
	Factory *Factory

	Box     string
	Log     bool
	Since   time.Duration
	Session string // "": the whole --since window
	JSON    bool
	// Format is "" or "ocsf" (with --log: OCSF 1.2.0 events).
	Format string

	// Now is the clock; nil means time.Now. Times are shown in its location.
	Now func() time.Time
}

// NewCmdEgress builds `corral egress`.
func NewCmdEgress(f *Factory, runF func(*EgressOptions) error) *cobra.Command {
	opts := &EgressOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "egress [BOX]",
		Short: "Show a box's egress allow-list and the destinations it tried",
		Long: `Egress shows the allow-list a box's broker enforces (the agent's default
hosts, the toolchains and egress groups, the egress config and the
approvals from "corral allow", each with its source), every destination the box tried since --since (denied first,
with counts and when last seen), the brokered credentials the box used
(uses and last use, from the audit log; refused credential requests
counted), the requests programs in the box filed with corral-request
(the box's own words: what, why and which process; answer with corral
allow or corral deny), and the latest denials.

BOX defaults to the box of the current project (-C). --log prints the
decision log itself, oldest first; when stdout is not a terminal, or with
--json, as JSON lines.

"corral egress groups" lists the egress groups (and the toolchains group
the box's golden recorded); "corral egress learn" proposes an allow-list
from what a learning box reached (corral up --learn).

--session ID shows what the box did while one session ran (the IDs are
in "corral egress --log" and "corral audit"); "last" is the latest. A
connection made from a session's shell carries its session ID, as the box
claims it ("who" in --log and --json), but any process in the box can
claim any session, so every connection of the box in that time is shown,
other sessions' included. Without --since it searches the whole log.`,
		Example: `  corral egress
  corral egress web-3f2a1c --since 1h
  corral egress --log --since 10m
  corral egress --log --format ocsf
  corral egress --session last
  corral egress --json | jq '.destinations[] | select(.allowed == false)'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Box = args[0]
			}
			if opts.Since <= 0 {
				return fmt.Errorf("egress: --since %s: want a positive duration such as 24h", opts.Since)
			}
			if opts.Format != "" && (opts.Format != "ocsf" || !opts.Log) {
				return fmt.Errorf("egress: --format %q: only --log --format ocsf", opts.Format)
			}
			if opts.Session != "" && !cmd.Flags().Changed("since") {
				opts.Since = 0 // the whole log
			}
			if runF != nil {
				return runF(opts)
			}
			return egressRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Log, "log", false, "print the decision log lines in order")
	cmd.Flags().DurationVar(&opts.Since, "since", 24*time.Hour, "show decisions of this last `duration`")
	cmd.Flags().StringVar(&opts.Session, "session", "", "show only session `ID` (or \"last\")")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.Format, "format", "", "with --log: `ocsf` prints each decision as an OCSF 1.2.0 Network Activity event (a request as API Activity)")
	cmd.AddCommand(NewCmdEgressGroups(f, nil), NewCmdEgressLearn(f, nil))
	return cmd
}

// egressDest is a destination summary in --json output.
type egressDest struct {
	Host     string        `json:"host"`
	Port     int           `json:"port"`
	Allowed  bool          `json:"allowed"`
	Count    int           `json:"count"`
	LastSeen time.Time     `json:"last_seen"`
	Reason   egress.Reason `json:"reason"`
}

func egressRun(opts *EgressOptions) error {
	f := opts.Factory
	l, err := f.Layout()
	if err != nil {
		return err
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	var since time.Time
	if opts.Since > 0 {
		since = now.Add(-opts.Since)
	}
	rep, err := broker.EgressReport(l, broker.ReportOptions{Box: opts.Box, Dir: f.Dir, Since: since, Session: opts.Session,
		LogOnly: opts.Log, Platform: f.Platform, Now: now})
	if err != nil {
		return err
	}
	name, entries, session := rep.Box, rep.Entries, rep.Session
	if opts.Log {
		return printEgressLog(opts, entries, now.Location())
	}
	if rep.ConfigErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: the allow-list below lacks the config, which does not load: %v\n", rep.ConfigErr)
	}
	rules, refused, requests, learningUntil := rep.Rules, rep.Refused, rep.Requests, rep.LearningUntil
	refusedRequests := rep.RefusedRequests
	if refusedRequests == nil {
		refusedRequests = []config.RepoRequest{}
	}
	asked := boxRequests(l, name, now, opts.IO.ErrOut)
	summary, creds, credRefused, denials := rep.Summary, rep.Credentials, rep.CredentialRefused, rep.Denials
	switch {
	case opts.JSON:
		dests := make([]egressDest, len(summary))
		for i, s := range summary {
			dests[i] = egressDest{s.Host, s.Port, s.Allowed, s.Count, s.LastSeen, s.Reason}
		}
		if rules == nil {
			rules = []approval.Rule{}
		}
		if denials == nil {
			denials = []egress.Entry{}
		}
		if requests == nil {
			requests = []config.RepoRequest{}
		}
		if refused == nil {
			refused = []approval.Rule{}
		}
		if creds == nil {
			creds = []audit.CredentialUse{}
		}
		out := map[string]any{"box": name, "since": since.UTC(), "allow_list": rules, "refused": refused,
			"destinations": dests, "recent_denials": denials, "pending_requests": requests, "refused_requests": refusedRequests,
			"credentials": creds, "credential_refused": credRefused, "box_requests": boxRequestsJSON(asked)}
		if session != "" {
			out["session"] = session
		}
		if !learningUntil.IsZero() {
			out["learning_until"] = learningUntil.UTC()
		}
		return printJSON(opts.IO.Out, SchemaEgress, out)
	case !opts.IO.OutTTY:
		// Machine rows, each led by its kind: allow, dest, deny.
		t := newTable(opts.IO.Out, false)
		for _, r := range rules {
			t.Row("allow", r.Entry, r.Origin, r.Source, rfc3339(r.Expires))
		}
		for _, r := range refused {
			t.Row("refused", r.Entry, r.Origin, r.Source, r.Why)
		}
		for _, q := range requests {
			t.Row("request", safeText(q.Entry), "pending", safeText(q.File))
		}
		for _, q := range refusedRequests {
			t.Row("request", safeText(q.Entry), "refused", safeText(q.File), q.Why)
		}
		for _, r := range asked {
			t.Row("box-request", safeText(r.Request), rfc3339(r.Time), safeText(r.Why), safeText(requestWho(r)))
		}
		for _, s := range summary {
			t.Row("dest", verdict(s.Allowed), safeText(s.Host), s.Port, s.Count, rfc3339(s.LastSeen), s.Reason)
		}
		for _, e := range denials {
			t.Row("deny", rfc3339(e.Time), e.Kind, safeText(e.Host), e.Port, e.Reason)
		}
		for _, c := range creds {
			t.Row("credential", safeText(c.Credential), c.Uses, rfc3339(c.LastUse), c.Failed, c.Refused)
		}
		if credRefused > 0 {
			t.Row("credential-refused", credRefused)
		}
		return t.Flush()
	}
	w := opts.IO.Out
	fmt.Fprintf(w, "box %s\n", name)
	if !learningUntil.IsZero() {
		fmt.Fprintf(w, "learning until %s: the broker also allows public hosts off this list and logs them (corral egress learn %s)\n", display.Clock(learningUntil, now), name)
	}
	fmt.Fprintf(w, "\nallow-list:\n")
	tw := newTable(w, true)
	for _, r := range rules {
		src := string(r.Origin) + " " + r.Source
		switch {
		case r.Origin == approval.OriginApproval && r.Source == string(approval.ScopeOnce):
			src += " (one connection), lapses " + expiresText(r.Expires, now) + " unused"
		case !r.Expires.IsZero():
			src += ", expires " + expiresText(r.Expires, now)
		}
		tw.Row("  "+r.Entry, src)
	}
	if len(rules) == 0 {
		tw.Row("  none: every destination is denied")
	}
	tw.Flush()
	if len(refused) > 0 {
		fmt.Fprintf(w, "\nignored (refused by the grant check; corral never writes these):\n")
		for _, r := range refused {
			fmt.Fprintf(w, "  %s  %s %s: %s\n", safeText(r.Entry), r.Origin, safeText(r.Source), safeText(r.Why))
		}
	}
	if len(requests) > 0 {
		fmt.Fprintf(w, "\nrequested by the repository, not allowed (review with corral approve %s):\n", name)
		for _, q := range requests {
			fmt.Fprintf(w, "  %s\n", safeText(q.Entry))
		}
	}
	if len(refusedRequests) > 0 {
		fmt.Fprintln(w, "\nrequested by the repository, refused by the grant check (never allowed):")
		for _, q := range refusedRequests {
			fmt.Fprintf(w, "  %s: %s\n", safeText(q.Entry), display.Text(q.Why, maxLine))
		}
	}
	printBoxRequests(w, name, asked, now)
	if session != "" {
		fmt.Fprintf(w, "\ndestinations in session %s:\n", safeText(session))
	} else {
		fmt.Fprintf(w, "\ndestinations in the last %s:\n", shortDuration(opts.Since))
	}
	tw = newTable(w, true)
	for _, s := range summary {
		row := []any{"  " + verdict(s.Allowed), hostPort(s.Host, s.Port), s.Count, "last " + shortDuration(now.Sub(s.LastSeen)) + " ago"}
		if !s.Allowed {
			row = append(row, s.Reason)
		}
		tw.Row(row...)
	}
	if len(summary) == 0 {
		tw.Row("  none")
	}
	tw.Flush()
	if len(creds) > 0 || credRefused > 0 {
		fmt.Fprintf(w, "\nbrokered credentials:\n")
		tw = newTable(w, true)
		for _, c := range creds {
			row := []any{"  " + safeText(c.Credential), plural(c.Uses, "use"), "last " + lastUse(c.LastUse, now)}
			if c.Failed > 0 {
				row = append(row, fmt.Sprintf("%d failed", c.Failed))
			}
			if c.Refused > 0 {
				row = append(row, fmt.Sprintf("%d refused", c.Refused))
			}
			tw.Row(row...)
		}
		if credRefused > 0 {
			tw.Row("  refused", plural(credRefused, "request"), "(no valid token, a foreign Host, or outside the funnel)")
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nrecent denials:\n")
	tw = newTable(w, true)
	for _, e := range denials {
		tw.Row("  "+e.Time.In(now.Location()).Format(time.DateTime), e.Kind, hostPort(e.Host, e.Port), string(e.Reason)+times(e)+held(e)+decisionWho(e))
	}
	if len(denials) == 0 {
		tw.Row("  none")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(denials) > 0 {
		fmt.Fprintf(w, "\nto allow a host: corral allow %s HOST\n", name)
	}
	return nil
}

// credentialUses sums the box's credential evidence in the audit log
// since since (core/audit): the broker writes it, counted, every minute
// and when it stops.
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func lastUse(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return shortDuration(now.Sub(t)) + " ago"
}

// egressTarget names the box to show and its project directory: BOX from
// its metadata, or the current project's box.
func egressTarget(opts *EgressOptions, l paths.Layout) (name, projectDir string, err error) {
	loc, err := boxmeta.Locate(l, opts.Box, opts.Factory.Dir)
	return loc.Box, loc.Project, err
}

func printEgressLog(opts *EgressOptions, entries []egress.Entry, loc *time.Location) error {
	if opts.Format == "ocsf" {
		return printEgressOCSF(opts, entries)
	}
	if opts.JSON || !opts.IO.OutTTY {
		for _, e := range entries {
			if err := jsonLine(opts.IO.Out, SchemaEgressDecision, e); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	for _, e := range entries {
		ts := e.Time.In(loc).Format(time.DateTime)
		if e.Kind == egress.KindRequest {
			fmt.Fprintf(tw, "%s\trequest\tfrom the box\t%s\t%q %s\n", ts, requestTarget(e), display.Text(e.Why, 0), requestWho(e))
			continue
		}
		if !e.IsDecision() {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", ts, e.Kind, safeText(e.Session))
			continue
		}
		detail := string(e.Reason) + times(e)
		if e.Allowed {
			detail = e.IP
		}
		detail += held(e) + decisionWho(e)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ts, verdict(e.Allowed), e.Kind, hostPort(e.Host, e.Port), detail)
	}
	return tw.Flush()
}

func verdict(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// times says how many denials an aggregated line stands for.
func times(e egress.Entry) string {
	if e.N() <= 1 {
		return ""
	}
	return fmt.Sprintf(" (×%d)", e.N())
}

// held says how long a request waited in a hold before the line's decision.
func held(e egress.Entry) string {
	if e.HeldMS == 0 {
		return ""
	}
	return " (held " + e.Held().Round(100*time.Millisecond).String() + ")"
}

// hostPort joins a logged host and port for a terminal. Hosts of malformed
// requests are logged as sent (capped): core/display escapes controls and
// shows a non-ASCII or punycode name with its Unicode form beside it, cut
// from the left so the registrable domain stays visible. A host that
// names this computer is marked "(this machine)" (core/egress ShowTarget).
func hostPort(host string, port int) string {
	if port == 0 {
		return egress.ShowHost(host, 0)
	}
	return egress.ShowTarget(net.JoinHostPort(host, strconv.Itoa(port)), 0)
}

// safeText quotes s unless it is printable ASCII without spaces, so that a
// box cannot write terminal escapes into `corral egress` output.
func safeText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// printEgressOCSF prints the decision log as OCSF events, one per line
// (docs/ORGANISATIONS.md); session marks have none.
func printEgressOCSF(opts *EgressOptions, entries []egress.Entry) error {
	for _, e := range entries {
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		req := e.Request
		if req == "" && e.Kind == egress.KindRequest {
			req = requestTarget(e)
		}
		o, ok := audit.OCSFDecision(audit.Decision{Time: e.Time, Box: e.Box, Kind: string(e.Kind), Host: e.Host, Port: e.Port,
			IP: e.IP, Allowed: e.Allowed, Reason: string(e.Reason), Count: e.N(), Request: req, Why: e.Why, Raw: raw}, version.Version)
		if !ok {
			continue
		}
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if _, err := opts.IO.Out.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}
