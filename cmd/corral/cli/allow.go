package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/spf13/cobra"
)

// AllowOptions are the options of `corral allow`.
type AllowOptions struct {
	IO      *IOStreams
	Factory *Factory

	Box   string
	Entry string
	Scope approval.Scope
	// For is the duration of ScopeFor.
	For time.Duration

	List   bool
	Revoke bool
	JSON   bool

	// Now is the clock for --list; nil means time.Now.
	Now func() time.Time
}

// NewCmdAllow builds `corral allow`.
func NewCmdAllow(f *Factory, runF func(*AllowOptions) error) *cobra.Command {
	opts := &AllowOptions{IO: f.IO, Factory: f}
	var once, session, always bool
	cmd := &cobra.Command{
		Use:   "allow BOX HOST|*.domain",
		Short: "Let a box's broker reach a host it denied",
		Long: `Allow adds an approval to a box's egress allow-list. A running broker
applies it within a second, without a restart.

HOST is host, *.domain (every name below domain), host:port or host:*
(any port); without a port, 443 and 80 are allowed. It passes the one
grant check corral approve, corral port, corral egress learn --apply and
the app use: a wildcard over a public suffix (such as *.com or *.co.uk)
is refused; address ranges belong in the trusted layer's egress = [...].

Scopes:
  --always     until revoked (the default)
  --session    until the box stops, and at most 12 hours
  --for DUR    for a duration such as 30m or 2h (1m to 720h)
  --once       one connection: the next one the broker admits by it
               (unused, it lapses after 10 minutes)

A broker with hold_denied set keeps a denied connection waiting: an
approval given within the hold lets it proceed, with no retry.

Approvals are kept in ~/.corral/projects/BOX.approvals.json, beside the
box's trusted config, which corral never rewrites. To make an entry part of
the config instead, add it to egress = [...] in that file.`,
		Example: `  corral allow web-3f2a1c api.example.test
  corral allow web-3f2a1c '*.cdn.example.test' --session
  corral allow web-3f2a1c registry.example.test:5000 --once
  corral allow web-3f2a1c api.example.test --for 2h
  corral allow --list web-3f2a1c
  corral allow --revoke web-3f2a1c api.example.test`,
		Args: func(cmd *cobra.Command, args []string) error {
			if opts.List {
				if len(args) != 1 {
					return fmt.Errorf("allow --list takes one box, got %d arguments", len(args))
				}
				return nil
			}
			if len(args) != 2 {
				return hint.New(fmt.Errorf("allow takes a box and a host, got %d arguments", len(args)), "corral allow BOX api.example.test")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Box = args[0]
			if len(args) > 1 {
				opts.Entry = args[1]
			}
			opts.Scope = approval.ScopeAlways
			hasFor := cmd.Flags().Changed("for")
			switch {
			case once:
				opts.Scope = approval.ScopeOnce
			case session:
				opts.Scope = approval.ScopeSession
			case hasFor:
				opts.Scope = approval.ScopeFor
				if err := approval.CheckFor(opts.For); err != nil {
					return fmt.Errorf("allow --for: %w", err)
				}
			}
			if (opts.List || opts.Revoke) && (once || session || always || hasFor) {
				return fmt.Errorf("allow: --once, --session, --for and --always go with adding an approval, not with --list or --revoke")
			}
			if runF != nil {
				return runF(opts)
			}
			return allowRun(opts)
		},
	}
	cmd.Flags().BoolVar(&always, "always", false, "allow until revoked (default)")
	cmd.Flags().BoolVar(&session, "session", false, "allow until the box stops (at most 12h)")
	cmd.Flags().DurationVar(&opts.For, "for", 0, "allow for this `duration` (such as 30m or 2h)")
	cmd.Flags().BoolVar(&once, "once", false, "allow one connection (unused, it lapses after 10m)")
	cmd.Flags().BoolVar(&opts.List, "list", false, "list the box's approvals")
	cmd.Flags().BoolVar(&opts.Revoke, "revoke", false, "remove the approval of HOST")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON (with --list)")
	cmd.MarkFlagsMutuallyExclusive("always", "session", "once", "for")
	cmd.MarkFlagsMutuallyExclusive("list", "revoke")
	return cmd
}

func allowRun(opts *AllowOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	if _, err := approval.Open(l, opts.Box); err != nil { // checks the name before it names any file
		return err
	}
	m, err := boxmeta.Read(l, opts.Box)
	if errors.Is(err, boxmeta.ErrNotFound) {
		return hint.New(fmt.Errorf("%w", err), "corral ls lists the boxes")
	}
	if err != nil {
		return err // a boxmeta.Error: its hint says what to do with the file
	}
	switch {
	case opts.List:
		return allowList(opts, l)
	case opts.Revoke:
		a, err := approval.Revoke(l, opts.Box, opts.Entry)
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "revoked %s for box %s\n", display.Authority(a.Entry, 0), opts.Box)
		return nil
	}
	var a approval.Approval
	if opts.Scope == approval.ScopeFor {
		a, err = approval.AllowFor(l, opts.Box, opts.Entry, opts.For, audit.ActorCLI)
	} else {
		a, err = approval.Allow(l, opts.Box, opts.Entry, opts.Scope, audit.ActorCLI)
	}
	if a.Entry == "" {
		return err
	}
	fmt.Fprintf(opts.IO.Out, "allowed %s for box %s (%s)\n", display.Authority(a.Entry, 0), opts.Box, scopeText(a))
	if m.Network != "" && m.Network != config.NetworkBroker {
		fmt.Fprintf(opts.IO.ErrOut, "note: box %s has network = %q, so its broker does not filter; the approval applies when it uses \"broker\"\n", opts.Box, m.Network)
	}
	return err // the approval holds; a failed audit record is still reported
}

func scopeText(a approval.Approval) string {
	switch a.Scope {
	case approval.ScopeSession:
		return "session: until the box stops, at most 12h"
	case approval.ScopeOnce:
		return "once: the next connection, within 10 minutes"
	case approval.ScopeFor:
		return "for " + a.Expires.Sub(a.Added).String() + ": until " + a.Expires.Format(time.RFC3339)
	}
	return string(a.Scope)
}

func allowList(opts *AllowOptions, l paths.Layout) error {
	s, err := approval.Open(l, opts.Box)
	if err != nil {
		return err
	}
	now := time.Now()
	if opts.Now != nil {
		now = opts.Now()
	}
	list, err := s.List(now)
	if err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []approval.Approval{}
		}
		return printJSONList(opts.IO.Out, SchemaApprovals, "approvals", list)
	}
	if !opts.IO.OutTTY {
		// Machine rows: no header, absolute times.
		tw := newTable(opts.IO.Out, false)
		for _, a := range list {
			exp := "never"
			if !a.Expires.IsZero() {
				exp = a.Expires.UTC().Format(time.RFC3339)
			}
			tw.Row(a.Entry, a.Scope, exp, a.Actor)
		}
		return tw.Flush()
	}
	if len(list) == 0 {
		fmt.Fprintf(opts.IO.Out, "no approvals for box %s\n", opts.Box)
		return nil
	}
	tw := newTable(opts.IO.Out, true)
	tw.Row("ENTRY", "SCOPE", "EXPIRES", "BY")
	for _, a := range list {
		tw.Row(display.Authority(a.Entry, 0), a.Scope, expiresText(a.Expires, now), a.Actor)
	}
	return tw.Flush()
}

// expiresText is "never" or "in 7m".
func expiresText(exp, now time.Time) string {
	if exp.IsZero() {
		return "never"
	}
	return "in " + shortDuration(exp.Sub(now))
}

// shortDuration rounds d to its largest unit: 42s, 7m, 3h, 2d.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
}
