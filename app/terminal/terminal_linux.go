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
	Log      *slog.Logger
}

var _ Launcher = (*Linux)(nil)

// New returns the platform's Launcher. stateDir is unused on Linux.
func New(stateDir string, log *slog.Logger) Launcher { return &Linux{Log: log} }

// Open starts argv in a new terminal window.
func (l *Linux) Open(ctx context.Context, argv []string) error {
	getenv, look := l.Getenv, l.LookPath
	if getenv == nil {
		getenv = os.Getenv
	}
	if look == nil {
		look = exec.LookPath
	}
	full, err := Resolve(LinuxCandidates(getenv), look, argv)
	if err != nil {
		return err
	}
	if l.Log != nil {
		l.Log.Info("opening terminal", "argv", full)
	}
	return start(full)
}
