package terminal

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
)

// Darwin opens commands in Terminal.app through a .command script, or in
// iTerm2 when CORRAL_TERMINAL=iterm.
type Darwin struct {
	StateDir string // scripts go in StateDir/run
	Log      *slog.Logger
}

var _ Launcher = (*Darwin)(nil)

// New returns the platform's Launcher; scripts are written under stateDir.
func New(stateDir string, log *slog.Logger) Launcher { return &Darwin{StateDir: stateDir, Log: log} }

// Open writes argv into a 0700 .command script and opens it.
func (d *Darwin) Open(ctx context.Context, argv []string) error {
	p, err := WriteCommandScript(d.StateDir, argv)
	if err != nil {
		return err
	}
	if strings.EqualFold(os.Getenv("CORRAL_TERMINAL"), "iterm") {
		if err := runAppleScript(ITermScript(p)); err != nil {
			os.Remove(p)
			return fmt.Errorf("opening iTerm2: %w\nallow Corral under System Settings › Privacy & Security › Automation, or unset CORRAL_TERMINAL", err)
		}
		return nil
	}
	// LaunchServices opens the document with Terminal: no Apple Events, so
	// no Automation prompt and no entitlement.
	out, err := exec.CommandContext(ctx, "/usr/bin/open", "-a", "Terminal", p).CombinedOutput()
	if err != nil {
		os.Remove(p)
		return fmt.Errorf("opening Terminal with %s: %w: %s", p, err, strings.TrimSpace(string(out)))
	}
	return nil
}
