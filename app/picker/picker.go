// Package picker asks the user for a project folder: NSOpenPanel on macOS;
// on Linux the XDG desktop portal's FileChooser over D-Bus, then zenity or
// kdialog when no portal answers.
//
// Pick blocks until the user chooses or cancels (minutes, perhaps): the app
// calls it off its event loop and posts the result back. The returned
// folder is the user's choice but still only a path: the app resolves it
// (core/project) before it reaches a terminal's argv.
package picker

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strings"

	"github.com/corral-dev/corral/core/hint"
)

// Picker asks the user for one folder.
type Picker interface {
	Pick(ctx context.Context) (string, error)
}

// ErrCancelled means the user closed the chooser without a folder.
var ErrCancelled = errors.New("no folder chosen")

// ErrUnavailable means no way to show a folder chooser was found; the
// error carries a hint naming the command-line way.
var ErrUnavailable = errors.New("no folder chooser available")

// Title is the chooser's window title.
const Title = "Open a project folder in corral"

// unavailable is ErrUnavailable with the hint, naming what was tried.
func unavailable(tried string) error {
	return hint.New(fmt.Errorf("%w (tried %s)", ErrUnavailable, tried),
		"run corral claude -C DIR in a terminal, or add your projects' parent folder to project_roots in ~/.corral/config.toml")
}

// Chain tries each picker in turn while they report ErrUnavailable.
type Chain []Picker

var _ Picker = Chain(nil)

// Pick returns the first answer that is not ErrUnavailable.
func (c Chain) Pick(ctx context.Context) (string, error) {
	var tried []string
	for _, p := range c {
		dir, err := p.Pick(ctx)
		if !errors.Is(err, ErrUnavailable) {
			return dir, err
		}
		tried = append(tried, strings.TrimPrefix(err.Error(), ErrUnavailable.Error()+": "))
	}
	return "", unavailable(strings.Join(tried, "; "))
}

// Command runs a dialog program that prints the chosen folder on stdout
// and exits 1 when the user cancels (zenity, kdialog).
type Command struct {
	Name     string // looked up on PATH
	Args     []string
	LookPath func(string) (string, error) // default exec.LookPath
}

var _ Picker = Command{}

// Zenity is GNOME's dialog program.
func Zenity() Command {
	return Command{Name: "zenity", Args: []string{"--file-selection", "--directory", "--title=" + Title}}
}

// Kdialog is KDE's dialog program.
func Kdialog() Command {
	return Command{Name: "kdialog", Args: []string{"--title", Title, "--getexistingdirectory", "."}}
}

// Pick runs the program.
func (c Command) Pick(ctx context.Context) (string, error) {
	look := c.LookPath
	if look == nil {
		look = exec.LookPath
	}
	p, err := look(c.Name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found", ErrUnavailable, c.Name)
	}
	out, err := exec.CommandContext(ctx, p, c.Args...).Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return "", ErrCancelled
	case err != nil:
		return "", fmt.Errorf("choosing a folder with %s: %w", c.Name, err)
	}
	dir := strings.TrimSuffix(string(out), "\n")
	if dir == "" || strings.ContainsAny(dir, "\n\x00") {
		return "", fmt.Errorf("choosing a folder with %s: unexpected answer %q", c.Name, dir)
	}
	return dir, nil
}

// FileURIPath returns the local path of a file:// URI, as the portal
// answers; anything else is an error.
func FileURIPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("reading the chosen folder %q: %w", uri, err)
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
		return "", fmt.Errorf("reading the chosen folder %q: not a local file URI", uri)
	}
	return u.Path, nil
}
