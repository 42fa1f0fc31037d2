package cli

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/corral-dev/corral/core/paths"
	"github.com/spf13/cobra"

	"github.com/corral-dev/corral/core/untrusted"
)

// AppFunc runs the menu-bar app until it quits.
type AppFunc func(ctx context.Context, layout paths.Layout, exe string, logger *slog.Logger) error

// AppOptions are the options of `corral app`.
type AppOptions struct {
	IO      *IOStreams
	Factory *Factory
}

// NewCmdApp builds `corral app`.
func NewCmdApp(f *Factory, runF func(*AppOptions) error) *cobra.Command {
	opts := &AppOptions{IO: f.IO, Factory: f}
	return &cobra.Command{
		Use:   "app",
		Short: "Run the menu-bar app",
		Long: `App runs corral's menu-bar app: every box with its host memory, state,
idle time and egress denials; Allow buttons for denied hosts; Start, Stop
and sessions per project. One instance per user; it logs to
~/.corral/logs/app.log.`,
		Example: "  corral app &",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			if f.App == nil {
				return errors.New("this corral build has no menu-bar app")
			}
			l, err := f.Layout()
			if err != nil {
				return err
			}
			if err := l.Ensure(); err != nil {
				return err
			}
			exe, err := f.Executable()
			if err != nil {
				return err
			}
			logf, err := untrusted.OpenFile(l.AppLog(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				return err
			}
			defer logf.Close()
			logger := slog.New(slog.NewTextHandler(logf, nil))
			ctx, cancel := signalContext()
			defer cancel()
			return f.App(ctx, l, exe, logger)
		},
	}
}
