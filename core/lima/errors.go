package lima

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/hint"
)

// Sentinels that *Error unwraps to.
var (
	// ErrNotFound means the named instance does not exist.
	ErrNotFound = errors.New("lima instance not found")
	// ErrNotInstalled means limactl could not be run at all.
	ErrNotInstalled = errors.New("limactl not installed")
	// ErrTooOld means limactl is older than MinVersion.
	ErrTooOld = errors.New("limactl too old")
	// ErrRoot means the process runs as root, which limactl refuses.
	ErrRoot = errors.New("running as root")
)

// Error is a failed limactl run.
type Error struct {
	Argv     []string // full argv, argv[0] = limactl path
	ExitCode int      // -1 when limactl did not run or was killed
	Stderr   string   // the first meaningful stderr line; for logrus lines the msg= value
	err      error    // sentinel or underlying cause, for errors.Is/As
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(strings.Join(e.Argv, " "))
	if e.ExitCode >= 0 {
		fmt.Fprintf(&b, ": exit status %d", e.ExitCode)
	}
	switch {
	case e.Stderr != "":
		b.WriteString(": " + e.Stderr)
	case e.err != nil:
		b.WriteString(": " + e.err.Error())
	}
	return b.String()
}

// Unwrap returns the sentinel (ErrNotFound, ErrNotInstalled) or the underlying cause.
func (e *Error) Unwrap() error { return e.err }

// Hint is a one-line suggestion for the user, or "".
func (e *Error) Hint() string { return hintFor(e.err) }

func hintFor(err error) string {
	switch {
	case errors.Is(err, ErrNotInstalled), errors.Is(err, ErrTooOld):
		return InstallHint(ThisInstall(), runtime.GOARCH, errors.Is(err, ErrTooOld))
	case errors.Is(err, ErrRoot):
		return "run corral as an unprivileged user (CI: packaging/linux/create-test-user.sh, then runuser -u corral-e2e)"
	}
	return ""
}

// RefuseRoot returns an error when the process runs as root: limactl refuses root ("must not run as the root
// user"), and corral should say so before starting anything.
func RefuseRoot() error { return refuseRoot(os.Geteuid()) }

func refuseRoot(euid int) error {
	if euid != 0 {
		return nil
	}
	return hint.New(fmt.Errorf("checking user: %w: Lima refuses to run as root", ErrRoot), hintFor(ErrRoot))
}

// stderrMessage picks the line of limactl's stderr that says what went wrong. limactl logs with logrus:
//
//	time="2026-01-01T00:00:00Z" level=fatal msg="instance \"x\" not found"
//
// It prefers the msg of a fatal line, then of an error line, then the first non-empty line that is not a
// logrus info/debug/warning line, then the first warning (`list --json NAME` of an unknown name exits 1 with only
// a warning: "No instance matching NAME found.").
func stderrMessage(stderr string) string {
	lines := strings.Split(strings.ReplaceAll(stderr, "\r\n", "\n"), "\n")
	for _, want := range []string{"fatal", "error"} {
		for _, l := range lines {
			if level, msg, ok := parseLogrus(l); ok && level == want {
				return msg
			}
		}
	}
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if level, msg, ok := parseLogrus(l); ok {
			switch level {
			case "info", "debug", "trace", "warning", "warn":
				continue
			}
			return msg
		}
		return l
	}
	for _, l := range lines {
		if level, msg, ok := parseLogrus(l); ok && (level == "warning" || level == "warn") {
			return msg
		}
	}
	return ""
}

// parseLogrus extracts level and msg from a logrus text-format line.
func parseLogrus(line string) (level, msg string, ok bool) {
	li := strings.Index(line, "level=")
	mi := strings.Index(line, "msg=")
	if li < 0 || mi < 0 {
		return "", "", false
	}
	level, _, _ = strings.Cut(line[li+len("level="):], " ")
	rest := line[mi+len("msg="):]
	if strings.HasPrefix(rest, `"`) {
		// Find the closing quote of the Go-quoted value.
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\\' {
				i++
				continue
			}
			if rest[i] == '"' {
				if s, err := strconv.Unquote(rest[:i+1]); err == nil {
					return level, s, true
				}
				break
			}
		}
		return level, strings.Trim(rest, `"`), true
	}
	msg, _, _ = strings.Cut(rest, " ")
	return level, msg, true
}

// isNotFound reports whether a limactl message says the instance does not exist. The wording differs per
// command in 1.2.2 (testdata/limactl-1.2.2-errors.txt): `instance "x" not found` (clone),
// `instance "x" does not exist, ...` (shell), `No instance matching x found.` (list), or the raw os error of
// reading `<LIMA_HOME>/x/lima.yaml` (stop, snapshot).
func isNotFound(msg string) bool {
	// Lima 2.x: `limactl list --json NAME` of a missing NAME warns "No instance matching NAME found." and
	// exits 1 with "unmatched instances" (cmd/limactl/list.go unmatchedInstancesError); 1.2.2 exits 0.
	return msg == "unmatched instances" ||
		strings.Contains(msg, "not found") && strings.Contains(msg, "instance") ||
		strings.HasPrefix(msg, "No instance matching") ||
		strings.Contains(msg, "does not exist") && strings.Contains(msg, "instance") ||
		strings.Contains(msg, "lima.yaml: no such file or directory")
}
