// Package opener shows a file or directory with the desktop's default
// application: xdg-open on Linux, open(1) on macOS (text files with the
// default text editor, directories in Finder).
package opener

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// Opener opens path with the desktop's default application.
type Opener interface {
	Open(ctx context.Context, path string) error
}

// Exec runs Argv(path) and waits for it; xdg-open and open return as
// soon as the application was asked to open the file.
type Exec struct {
	Argv func(path string) []string
}

var _ Opener = Exec{}

// New returns the platform's Opener.
func New() Opener { return Exec{Argv: platformArgv} }

// Open runs the opener for path.
func (e Exec) Open(ctx context.Context, path string) error {
	argv := e.Argv(path)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("opening %s with %s: %w: %s", path, argv[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}
