package cli

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
)

// Service builds the lifecycle service for a command: the one way
// commands get it (options hold it behind a narrow interface). It is built
// once per command: the idle sweep before the command and the command
// share it.
func (f *Factory) Service() (*box.Service, error) {
	if f.service != nil {
		return f.service, nil
	}
	s, err := f.newService()
	if err != nil {
		return nil, err
	}
	f.service = s
	return s, nil
}

func (f *Factory) newService() (*box.Service, error) {
	if f.NewService != nil {
		return f.NewService()
	}
	l, err := f.Layout()
	if err != nil {
		return nil, err
	}
	exe, err := f.Executable()
	if err != nil {
		return nil, err
	}
	s, err := box.NewService(l, exe, f.Logger, audit.ActorCLI)
	if err != nil {
		return nil, err
	}
	s.Progress, s.ProgressTTY = f.IO.ErrOut, f.IO.ErrTTY
	return s, nil
}

// Resolve loads the project of -C (or the working directory) with flags as
// the flags layer, refusing on any config violation; the config's warnings
// go to stderr.
func (f *Factory) Resolve(flags config.Config) (boxmeta.Resolved, error) {
	l, err := f.Layout()
	if err != nil {
		return boxmeta.Resolved{}, err
	}
	return boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: f.Dir, Flags: flags, Platform: f.Platform})
}

// boxArg returns the box named by args[0], or the current project's box.
func boxArg(f *Factory, args []string) (string, error) {
	if len(args) > 0 {
		return args[0], nil
	}
	r, err := f.Resolve(config.Config{})
	if r.Project.Box == "" {
		return "", err
	}
	if err != nil && !errors.Is(err, config.ErrViolation) {
		return "", err
	}
	return r.Project.Box, nil
}

// signalContext is cancelled by SIGINT/SIGTERM, so ctrl-C during a create
// leaves state the next command can recover.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// eachBox runs fn for the named boxes, or for the project's box when none
// is named, stopping at the first error.
func eachBox(f *Factory, names []string, fn func(ctx context.Context, s *box.Service, name string) error) error {
	if len(names) == 0 {
		b, err := boxArg(f, nil)
		if err != nil {
			return err
		}
		names = []string{b}
	}
	s, err := f.Service()
	if err != nil {
		return err
	}
	ctx, cancel := signalContext()
	defer cancel()
	for _, b := range names {
		if err := fn(ctx, s, b); err != nil {
			return err
		}
	}
	return nil
}
