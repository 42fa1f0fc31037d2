// Package terminal opens a command in a new terminal window.
//
// The config key terminal picks the app. Linux tries it first, then
// $TERMINAL, xdg-terminal-exec, x-terminal-emulator, gnome-terminal,
// konsole and xterm, and passes the command as separate arguments (never
// as one shell string). macOS writes the command into a 0700 ".command"
// script with every argument shell-quoted and opens it with one child
// process (MacInvocation): Terminal through LaunchServices ("open -a
// Terminal"), which sends no Apple Events; iTerm2 through osascript.
package terminal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Launcher opens argv in a new terminal window. Open returns once the
// terminal has been started, not when the command ends.
type Launcher interface {
	Open(ctx context.Context, argv []string) error
}

// ErrNoTerminal means no known terminal emulator was found.
var ErrNoTerminal = errors.New("no terminal emulator found")

// Candidate is one way to start a terminal: Path (a name looked up on
// PATH) followed by Prefix, then the command's argv.
type Candidate struct {
	Path   string
	Prefix []string
}

// LinuxCandidates lists, in order of preference, the terminals tried on
// Linux. configured is the terminal config key ("" for none), a command
// that takes -e. $TERMINAL is a user override (an informal convention of i3/sway
// users) and takes "-e"; xdg-terminal-exec is the proposed freedesktop
// standard and takes the command directly; x-terminal-emulator is the
// Debian alternative, for which policy requires "-e cmd args".
func LinuxCandidates(configured string, getenv func(string) string) []Candidate {
	var cs []Candidate
	if configured != "" {
		cs = append(cs, Candidate{Path: configured, Prefix: []string{"-e"}})
	}
	if t := strings.TrimSpace(getenv("TERMINAL")); t != "" {
		cs = append(cs, Candidate{Path: t, Prefix: []string{"-e"}})
	}
	return append(cs,
		Candidate{Path: "xdg-terminal-exec"},
		Candidate{Path: "x-terminal-emulator", Prefix: []string{"-e"}},
		Candidate{Path: "gnome-terminal", Prefix: []string{"--"}},
		Candidate{Path: "konsole", Prefix: []string{"-e"}},
		Candidate{Path: "xterm", Prefix: []string{"-e"}},
	)
}

// Resolve returns the full argv for the first candidate that lookPath
// finds, or ErrNoTerminal.
func Resolve(cs []Candidate, lookPath func(string) (string, error), argv []string) ([]string, error) {
	if len(argv) == 0 {
		return nil, errors.New("opening a terminal: empty command")
	}
	var tried []string
	for _, c := range cs {
		p, err := lookPath(c.Path)
		if err != nil {
			tried = append(tried, c.Path)
			continue
		}
		out := append([]string{p}, c.Prefix...)
		return append(out, argv...), nil
	}
	return nil, fmt.Errorf("%w (tried %s); set $TERMINAL to your terminal's command", ErrNoTerminal, strings.Join(tried, ", "))
}

// start runs argv detached from the app: its own session, no stdio, and
// reaped in the background so it leaves no zombie.
func start(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = detached()
	devnull, err := os.Open(os.DevNull)
	if err == nil {
		cmd.Stdin = devnull
		defer devnull.Close()
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting terminal %s: %w", argv[0], err)
	}
	go func() { _ = cmd.Wait() }()
	return nil
}
