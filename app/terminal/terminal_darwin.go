package terminal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/corral-dev/corral/core/hint"
)

// Darwin opens commands in the terminal app the config names (see
// MacInvocation), through a .command script and one child process.
type Darwin struct {
	StateDir string        // scripts go here (~/.corral/run)
	App      func() string // the terminal config key, read per Open; nil means Terminal
	Log      *slog.Logger
}

var _ Launcher = (*Darwin)(nil)

// New returns the platform's Launcher; scripts are written in stateDir,
// and app (may be nil) names the terminal app at each Open.
func New(stateDir string, app func() string, log *slog.Logger) Launcher {
	return &Darwin{StateDir: stateDir, App: app, Log: log}
}

// Open writes argv into a 0700 .command script and opens it in the app.
func (d *Darwin) Open(ctx context.Context, argv []string) error {
	app := ""
	if d.App != nil {
		app = d.App()
	}
	p, err := WriteCommandScript(d.StateDir, argv)
	if err != nil {
		return err
	}
	inv := MacInvocation(app, p)
	cmd := exec.CommandContext(ctx, inv.Argv[0], inv.Argv[1:]...)
	if inv.Stdin != "" {
		cmd.Stdin = strings.NewReader(inv.Stdin)
	}
	if d.Log != nil {
		d.Log.Info("opening terminal", "app", app, "argv", inv.Argv)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(p)
		msg := strings.TrimSpace(string(out))
		return hint.New(fmt.Errorf("opening %s: %w: %s", inv.Argv[0], err, msg), MacHint(app, msg))
	}
	return nil
}
