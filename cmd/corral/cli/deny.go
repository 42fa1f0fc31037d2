package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/spf13/cobra"
)

// DenyOptions are the options of `corral deny`.
type DenyOptions struct {
	IO      *IOStreams
	Factory *Factory

	Box     string
	Request string // host, host:port or "port N"
}

// NewCmdDeny builds `corral deny`.
func NewCmdDeny(f *Factory, runF func(*DenyOptions) error) *cobra.Command {
	opts := &DenyOptions{IO: f.IO, Factory: f}
	cmd := &cobra.Command{
		Use:   "deny BOX HOST[:PORT]|port:PORT",
		Short: "Answer no to a request the box filed (corral-request)",
		Long: `Deny answers a request a program in the box filed with corral-request: the
request leaves the inbox (corral egress, the menu), and a connection the
broker holds for it is refused at once. Nothing else changes: a request
never granted anything, and a later request for the same host asks again.

To answer yes, allow the host with corral allow (any scope); a held
connection then proceeds. A port request is answered with corral port.`,
		Example: `  corral deny web-3f2a1c registry.example.test
  corral deny web-3f2a1c api.example.test:8443
  corral deny web-3f2a1c port:3000`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return hint.New(fmt.Errorf("deny takes a box and a request, got %d arguments", len(args)), "corral egress BOX lists the requests")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Box, opts.Request = args[0], args[1]
			if runF != nil {
				return runF(opts)
			}
			return denyRun(opts)
		},
	}
	return cmd
}

func denyRun(opts *DenyOptions) error {
	l, err := opts.Factory.Layout()
	if err != nil {
		return err
	}
	if _, err := approval.Open(l, opts.Box); err != nil { // checks the name before it names any file
		return err
	}
	if _, err := boxmeta.Read(l, opts.Box); errors.Is(err, boxmeta.ErrNotFound) {
		return hint.New(fmt.Errorf("%w", err), "corral ls lists the boxes")
	} else if err != nil {
		return err
	}
	d, err := approval.Deny(l, opts.Box, opts.Request, audit.ActorCLI)
	if err != nil {
		return err
	}
	what := display.Authority(d.Request, 0)
	if strings.HasPrefix(d.Request, "port ") {
		what = d.Request
	}
	fmt.Fprintf(opts.IO.Out, "denied the request for %s of box %s\n", what, opts.Box)
	return nil
}
