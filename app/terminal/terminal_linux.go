package terminal

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
)

// Linux opens commands in the first terminal of LinuxCandidates.
type Linux struct {
	Getenv   func(string) string          // default os.Getenv
	LookPath func(string) (string, error) // default exec.LookPath
	App      func() string                // the terminal config key, read per Open; nil or "" means none
	Log      *slog.Logger
}

var _ Launcher = (*Linux)(nil)

// New returns the platform's Launcher. stateDir is unused on Linux; app
// (may be nil) names a terminal command tried first.
func New(stateDir string, app func() string, log *slog.Logger) Launcher {
	return &Linux{App: app, Log: log}
}

// Open starts argv in a new terminal window.
func (l *Linux) Open(ctx context.Context, argv []string) error {
	getenv, look := l.Getenv, l.LookPath
	if getenv == nil {
		getenv = os.Getenv
	}
	if look == nil {
		look = exec.LookPath
	}
	configured := ""
	if l.App != nil {
		configured = l.App()
	}
	full, err := Resolve(LinuxCandidates(configured, getenv), look, argv)
	if err != nil {
		return err
	}
	if l.Log != nil {
		l.Log.Info("opening terminal", "argv", full)
	}
	return start(full)
}
