package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/hint"
	"github.com/spf13/cobra"
)

// AttachOptions are the options of `corral attach`.
type AttachOptions struct {
	IO      *IOStreams
	Factory *Factory
	Box     string
	Session string
}

// NewCmdAttach builds `corral attach`.
func NewCmdAttach(f *Factory, runF func(*AttachOptions) error) *cobra.Command {
	opts := &AttachOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:   "attach [BOX] [SESSION]",
		Short: "Re-enter a detachable session running in a box",
		Long: `Attach connects the terminal to a detachable session (corral claude in a
terminal, corral run --detach). Without BOX it is the project's box;
without SESSION the box's only session. With one argument that names a
box, that box; otherwise a session of the project's box.

Closing the terminal, or tmux's detach key (ctrl-b d), detaches again:
the session goes on running.`,
		Example: "  corral attach\n  corral attach claude\n  corral attach web-3f2a1c tests",
		Args:    cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 2:
				opts.Box, opts.Session = args[0], args[1]
			case 1:
				opts.Box = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return attachRun(opts)
		},
	}
}

func attachRun(opts *AttachOptions) error {
	f := opts.Factory
	s, err := f.Service()
	if err != nil {
		return err
	}
	boxName, session := opts.Box, opts.Session
	// One argument: a box when one has that name, else a session of the
	// project's box.
	if boxName != "" && session == "" {
		if _, err := boxmeta.Read(s.Layout, boxName); errors.Is(err, boxmeta.ErrNotFound) {
			boxName, session = "", boxName
		}
	}
	if boxName == "" {
		if boxName, err = boxArg(f, nil); err != nil {
			return err
		}
	}
	ctx, cancel := signalContext()
	defer cancel()
	if session == "" {
		list, err := s.GuestSessions(ctx, boxName)
		if err != nil {
			return err
		}
		switch len(list) {
		case 0:
			return hint.New(fmt.Errorf("box %s has no running session", boxName), "corral claude or corral run --detach start one")
		case 1:
			session = list[0].Name
		default:
			var names []string
			for _, g := range list {
				names = append(names, g.Name) // checked by box.ParseGuestSessions
			}
			return hint.New(fmt.Errorf("box %s has %d sessions (%s): name one", boxName, len(list), strings.Join(names, ", ")), fmt.Sprintf("corral attach %s SESSION", boxName))
		}
	}
	term, _ := f.lookupEnv("TERM")
	in, out, errOut := opts.IO.Terminal() // the session draws on the terminal itself
	err = s.Attach(ctx, boxName, session, box.AttachOptions{Term: term, Stdin: in, Stdout: out, Stderr: errOut})
	var ee *box.ExitError
	if errors.As(err, &ee) {
		return &ExitCodeError{Code: ee.Code}
	}
	return err
}
