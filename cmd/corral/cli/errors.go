package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/remote"
)

// Exit codes.
const (
	ExitOK        = 0
	ExitError     = 1
	ExitViolation = 2 // config policy violation or invalid config; a refused request
)

// ExitCodeError ends the command with a specific code; its message, if
// any, has already been printed.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// exitCoder is an error that decides its exit code.
type exitCoder interface{ ExitCode() int }

// exitCode maps an error to the process exit code.
func exitCode(err error) int {
	var ec *ExitCodeError
	var coder exitCoder
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ec):
		return ec.Code
	case errors.As(err, &coder):
		return coder.ExitCode()
	case errors.Is(err, config.ErrViolation):
		return ExitViolation
	}
	return ExitError
}

// ErrorCode is the stable code of an error printed under --json
// (docs/JSON.md lists them). A script decides on the code, never on the
// message.
type ErrorCode string

// Error codes.
const (
	CodeError         ErrorCode = "error"          // any other failure
	CodeUsage         ErrorCode = "usage"          // a command or flag corral does not know, or a flag it cannot parse
	CodeConfigInvalid ErrorCode = "config_invalid" // the config has problems (problems lists them)
	CodeRefused       ErrorCode = "refused"        // a repository's request the grant check refuses
	CodeGrantRefused  ErrorCode = "grant_refused"  // an entry the grant check refuses (allow, port, approve)
	CodeBoxNotFound   ErrorCode = "box_not_found"
	CodeNoLima        ErrorCode = "lima_not_installed"
	CodeUnknownHost   ErrorCode = "unknown_host"
	CodeUnreachable   ErrorCode = "host_unreachable"
)

// coded is an error that names its code.
type coded interface{ Code() ErrorCode }

// usageError is a command line corral cannot parse: a flag error (cobra's
// FlagErrorFunc), an unknown command or subcommand.
type usageError struct{ err error }

func (e *usageError) Error() string   { return e.err.Error() }
func (e *usageError) Unwrap() error   { return e.err }
func (e *usageError) Code() ErrorCode { return CodeUsage }

// codeOf is err's stable code.
func codeOf(err error) ErrorCode {
	var c coded
	switch {
	case errors.As(err, &c):
		return c.Code()
	case errors.Is(err, config.ErrViolation):
		return CodeConfigInvalid
	case errors.Is(err, config.ErrGrantRefused):
		return CodeGrantRefused
	case errors.Is(err, boxmeta.ErrNotFound), errors.Is(err, lima.ErrNotFound):
		return CodeBoxNotFound
	case errors.Is(err, lima.ErrNotInstalled):
		return CodeNoLima
	case errors.Is(err, remote.ErrUnknownHost):
		return CodeUnknownHost
	case errors.Is(err, remote.ErrUnreachable):
		return CodeUnreachable
	}
	return CodeError
}

// SchemaError is the schema of an error under --json.
const SchemaError = "corral.error/v1"

// jsonError is what an error under --json is: one object on stderr.
type jsonError struct {
	Schema   string         `json:"schema"`
	Code     ErrorCode      `json:"code"`
	Message  string         `json:"message"`
	Hints    []string       `json:"hints,omitempty"`
	Problems []checkProblem `json:"problems,omitempty"`
	Exit     int            `json:"exit"`
}

// printErrorJSON prints err as one JSON object (and a newline) on w: the
// message exactly as corral made it (JSON escapes what a terminal would
// need sanitised), its stable code, its hints, and for a config error
// every problem. An ExitCodeError prints nothing: the command printed its
// result already.
func printErrorJSON(w io.Writer, err error) {
	var ec *ExitCodeError
	if errors.As(err, &ec) {
		return
	}
	out := jsonError{Schema: SchemaError, Code: codeOf(err), Message: strings.TrimPrefix(err.Error(), "corral: "), Hints: hint.All(err), Exit: exitCode(err)}
	if out.Code == CodeConfigInvalid {
		out.Problems = problemsOf(err)
	}
	enc := json.NewEncoder(dataOut(w))
	enc.Encode(out) //nolint:errcheck // best effort at exit, as printError
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
