package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/version"
	"github.com/spf13/cobra"
)

// AuditOptions are the options of `corral audit`.
type AuditOptions struct {
	IO      *IOStreams
	Factory *Factory
	Since   string
	Box     string
	JSON    bool
	// Format is "text" (the default), "json" (as --json) or "ocsf".
	Format string
	// Follow keeps printing events as they are appended; Forward sends
	// them to the organisation's collector ([audit] forward) instead.
	Follow  bool
	Forward bool
	// Poll is how often --follow looks for new events.
	Poll time.Duration
	// Hostname names this machine in OCSF events (tests fix it).
	Hostname string
	// Now and Location are the clock and the time zone of human output;
	// tests fix them.
	Now      func() time.Time
	Location *time.Location
	// Context ends --follow (tests; else the command's context).
	Context context.Context
}

// NewCmdAudit builds `corral audit`.
func NewCmdAudit(f *Factory, runF func(*AuditOptions) error) *cobra.Command {
	opts := &AuditOptions{IO: f.IO, Factory: f, Now: time.Now, Location: time.Local, Poll: 500 * time.Millisecond}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit log: what happened to boxes, and who did it",
		Long: `Audit prints the audit log (~/.corral/logs/audit.jsonl and its rotated
generation) oldest first, one event per line. It records names of forwarded
variables, never their values.

--format ocsf prints each event as an OCSF 1.2.0 event (Network Activity,
HTTP Activity, Process Activity or API Activity: docs/ORGANISATIONS.md maps
every kind). --follow keeps printing events as they are appended, until
interrupted. --forward (with --follow) sends them to the collector the
organisation's managed policy names ([audit] forward) instead of printing
them.`,
		Example: "  corral audit --since 24h\n  corral audit --box web-3f2a1c --since 7d\n  corral audit --json | jq .\n  corral audit --format ocsf --follow\n  corral audit --follow --forward",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch opts.Format {
			case "", "text":
			case "json":
				opts.JSON = true
			case "ocsf":
				if opts.JSON {
					return fmt.Errorf("--json and --format ocsf: choose one")
				}
			default:
				return fmt.Errorf("--format %q: want text, json or ocsf", opts.Format)
			}
			if opts.Forward && !opts.Follow {
				return fmt.Errorf("--forward goes with --follow")
			}
			if opts.Context == nil {
				opts.Context = cmd.Context()
			}
			if runF != nil {
				return runF(opts)
			}
			return auditRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Since, "since", "", "only events newer than this `age` (90m, 24h, 7d) or time (RFC 3339)")
	cmd.Flags().StringVar(&opts.Box, "box", "", "only events of this `box`")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON lines, one event per line")
	cmd.Flags().StringVar(&opts.Format, "format", "", "`format` of the events: text, json or ocsf (OCSF 1.2.0 JSON lines)")
	cmd.Flags().BoolVar(&opts.Follow, "follow", false, "keep printing events as they are appended")
	cmd.Flags().BoolVar(&opts.Forward, "forward", false, "with --follow: send the events to the organisation's collector ([audit] forward of the managed policy)")
	return cmd
}

// parseSince reads an age (Go duration, or whole days as "7d") or an RFC
// 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(d); err == nil && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("--since %q: want an age such as 90m, 24h or 7d, or an RFC 3339 time", s)
}

func auditRun(opts *AuditOptions) error {
	since, err := parseSince(opts.Since, opts.Now())
	if err != nil {
		return err
	}
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	filter := audit.Filter{Since: since, Box: opts.Box}
	if opts.Follow {
		return auditFollow(opts, l.AuditLog(), filter)
	}
	evs, err := audit.Read(l.AuditLog(), filter)
	if err != nil {
		return err
	}
	if opts.Format == "ocsf" {
		for _, ev := range evs {
			if err := auditOCSF(opts, ev); err != nil {
				return err
			}
		}
		return nil
	}
	if opts.JSON {
		for _, ev := range evs {
			if err := jsonLine(opts.IO.Out, SchemaAuditEvent, ev); err != nil {
				return err
			}
		}
		return nil
	}
	if len(evs) == 0 {
		if opts.IO.OutTTY {
			fmt.Fprintln(opts.IO.ErrOut, "no audit events")
		}
		return nil
	}
	loc := opts.Location
	if loc == nil {
		loc = time.Local
	}
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	for _, ev := range evs {
		box, actor := ev.Box, string(ev.Actor)
		if box == "" {
			box = "-"
		}
		if actor == "" {
			actor = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ev.Time.In(loc).Format("2006-01-02 15:04:05"),
			display.Text(string(ev.Kind), 40), display.Text(box, 0), display.Text(actor, 40), auditDetails(ev))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// An event without details would end in the padding of its actor.
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			fmt.Fprintln(opts.IO.Out, strings.TrimRight(line, " \n"))
		}
	}
	return nil
}

// auditDetails renders the event's forwarded names and fields as sorted
// key=value pairs.
func auditDetails(ev audit.Event) string {
	var parts []string
	if len(ev.EnvNames) > 0 {
		parts = append(parts, "env="+display.Text(strings.Join(ev.EnvNames, ","), 0))
	}
	keys := make([]string, 0, len(ev.Fields))
	for k := range ev.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts = append(parts, display.Text(k, 0)+"="+auditValue(ev.Fields[k]))
	}
	return strings.Join(parts, " ")
}

func auditValue(v any) string {
	switch x := v.(type) {
	case string:
		// Field values can come from a box (the host of a denial): no
		// control or bidi rune reaches the terminal either way.
		if x == "" || strings.ContainsAny(x, " \t\n\"=") {
			return display.Text(strconv.Quote(x), 0)
		}
		return display.Text(x, 0)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = auditValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case nil:
		return "-"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// auditOCSF prints ev as one OCSF JSON line.
func auditOCSF(opts *AuditOptions, ev audit.Event) error {
	b, err := json.Marshal(audit.OCSF(ev, auditHost(opts), version.Version))
	if err != nil {
		return err
	}
	_, err = opts.IO.Out.Write(append(b, '\n'))
	return err
}

func auditHost(opts *AuditOptions) string {
	if opts.Hostname != "" {
		return opts.Hostname
	}
	h, _ := os.Hostname()
	return h
}

// auditFollow prints (or forwards) every event, then each appended one,
// until the command's context ends (interrupt).
func auditFollow(opts *AuditOptions, path string, filter audit.Filter) error {
	ctx := opts.Context
	if ctx == nil {
		ctx = context.Background()
	}
	if opts.Forward {
		m := config.SystemManaged()
		if m.Err != nil {
			return m.Err
		}
		a := m.Floor.Audit
		if a == nil || a.Forward == "" {
			return hint.New(errors.New("audit --forward: the organisation's managed policy names no collector"),
				"set [audit] forward in "+config.ManagedPath()+" (docs/ORGANISATIONS.md)")
		}
		fw, err := config.ParseForward(a.Forward)
		if err != nil {
			return fmt.Errorf("%s: [audit] forward: %w", m.File, err)
		}
		f := &audit.Forwarder{Scheme: fw.Scheme, Addr: fw.Addr, URL: fw.URL, OCSF: a.Format != "corral",
			Host: auditHost(opts), Version: version.Version}
		defer f.Close()
		return audit.Follow(ctx, path, filter, opts.Poll, func(ev audit.Event) error {
			// An event being sent is sent whole when following ends:
			// the send has its own timeout.
			if err := f.Send(context.WithoutCancel(ctx), ev); err != nil {
				// The collector may be restarting: say so and go on;
				// the event stays in the log.
				fmt.Fprintf(opts.IO.ErrOut, "corral: %s\n", display.Text(err.Error(), 300))
			}
			return nil
		})
	}
	return audit.Follow(ctx, path, filter, opts.Poll, func(ev audit.Event) error {
		switch {
		case opts.Format == "ocsf":
			return auditOCSF(opts, ev)
		case opts.JSON || !opts.IO.OutTTY:
			return jsonLine(opts.IO.Out, SchemaAuditEvent, ev)
		}
		fmt.Fprintf(opts.IO.Out, "%s  %s  %s  %s  %s\n", ev.Time.In(opts.Location).Format("2006-01-02 15:04:05"),
			display.Text(string(ev.Kind), 40), display.Text(orDash(ev.Box), 0), display.Text(orDash(string(ev.Actor)), 40), auditDetails(ev))
		return nil
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
