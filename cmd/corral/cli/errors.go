package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitViolation = 2 // config policy violation or invalid config
)

// ExitCodeError ends the command with a specific code; its message, if
// any, has already been printed.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var ec *ExitCodeError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.Code
	case errors.Is(err, config.ErrViolation):
		return ExitViolation
	}
	return ExitError
}

// printError prints err once: "corral: " and the message; lines that
// start with "hint:" stay on their own line.
func printError(w io.Writer, err error) {
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		return
	}
	msg := displayLines(strings.TrimPrefix(err.Error(), "corral: "))
	if errors.Is(err, config.ErrViolation) {
		fmt.Fprintf(w, "corral: refusing: the config has problems:\n%s\n", indent(msg))
		return
	}
	fmt.Fprintf(w, "corral: %s\n", msg)
	for _, h := range hint.All(err) {
		fmt.Fprintf(w, "hint: %s\n", displayLines(h))
	}
}

// displayLines sanitises each line of an error for the terminal: an error
// can carry text a repository or a box wrote (a config value, a git ref, a
// guest's message), and only the line structure is corral's own.
func displayLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = display.Text(l, 4096)
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "  ") {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}
