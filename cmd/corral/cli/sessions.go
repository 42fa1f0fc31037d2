package cli

import (
	"fmt"
	"time"

	"github.com/corral-dev/corral/core/box"
	"github.com/spf13/cobra"
)

// SessionsOptions are the options of `corral sessions`.
type SessionsOptions struct {
	IO      *IOStreams
	Factory *Factory
	JSON    bool
}

// NewCmdSessions builds `corral sessions`.
func NewCmdSessions(f *Factory, runF func(*SessionsOptions) error) *cobra.Command {
	opts := &SessionsOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List the detachable sessions running in boxes",
		Long: `Sessions asks every running box for its detachable sessions (corral
claude in a terminal, corral run --detach): their name, agent, age, how
many terminals are attached, and when they last had input or output.`,
		Example: "  corral sessions\n  corral sessions --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return sessionsRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func sessionsRun(opts *SessionsOptions) error {
	s, err := opts.Factory.Service()
	if err != nil {
		return err
	}
	list, err := s.List()
	if err != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	all := []box.GuestSession{}
	for _, st := range list {
		if st.State != "Running" {
			continue
		}
		gs, err := s.GuestSessions(ctx, st.Name)
		if err != nil {
			fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", err)
			continue
		}
		all = append(all, gs...)
	}
	if opts.JSON {
		return printJSONList(opts.IO.Out, SchemaSessions, "sessions", all)
	}
	if len(all) == 0 {
		if opts.IO.OutTTY {
			fmt.Fprintln(opts.IO.ErrOut, "no detachable sessions (corral claude in a terminal, or corral run --detach, starts one)")
		}
		return nil
	}
	now := time.Now()
	t := newTable(opts.IO.Out, opts.IO.OutTTY)
	t.Row("BOX", "SESSION", "AGENT", "STARTED", "ATTACHED", "LAST ACTIVITY")
	for _, g := range all {
		agent := g.Agent
		if agent == "" {
			agent = "-"
		}
		t.Row(g.Box, g.Name, agent, now.Sub(g.Created).Round(time.Second).String()+" ago", g.Attached,
			now.Sub(g.Activity).Round(time.Second).String()+" ago")
	}
	return t.Flush()
}
