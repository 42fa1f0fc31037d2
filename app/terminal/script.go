package terminal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ShellQuote quotes s for POSIX sh and zsh: it is wrapped in single quotes
// and each ' becomes '\”. Plain words made only of safe characters are
// left alone so scripts stay readable.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// CommandScript is the text of a .command file that runs argv. The script
// removes itself first (it is single-use), then execs argv with every
// argument quoted. A login shell gives the user's PATH, as a new Terminal
// window would.
func CommandScript(argv []string) []byte {
	var b strings.Builder
	b.WriteString("#!/bin/zsh -l\n")
	b.WriteString("# Written by corral to open one command in a new terminal window.\n")
	b.WriteString("rm -f -- \"$0\"\n")
	b.WriteString("exec")
	for _, a := range argv {
		b.WriteString(" ")
		b.WriteString(ShellQuote(a))
	}
	b.WriteString("\n")
	return []byte(b.String())
}

// WriteCommandScript writes CommandScript(argv) to a new file
// dir/corral-<random>.command with mode 0700 (dir is created 0700; the app
// passes ~/.corral/run) and returns its path. The random name keeps the
// path free of characters that need quoting beyond dir itself.
func WriteCommandScript(dir string, argv []string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("writing terminal script: empty command")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating script directory %s: %w", dir, err)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("naming terminal script: %w", err)
	}
	p := filepath.Join(dir, "corral-"+hex.EncodeToString(rnd[:])+".command")
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return "", fmt.Errorf("writing terminal script %s: %w", p, err)
	}
	if _, err := f.Write(CommandScript(argv)); err != nil {
		f.Close()
		return "", fmt.Errorf("writing terminal script %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing terminal script %s: %w", p, err)
	}
	return p, nil
}

// AppleScriptString quotes s as an AppleScript string literal.
func AppleScriptString(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `"`, `\"`)
	return `"` + s + `"`
}

// ITermScript is the AppleScript that opens a new iTerm2 window and runs
// the script at path in it. Only the script path, never user text, goes
// into the AppleScript, quoted twice: for the shell, then as an
// AppleScript string.
func ITermScript(path string) string {
	return "tell application \"iTerm2\"\n" +
		"\tactivate\n" +
		"\tset w to (create window with default profile)\n" +
		"\ttell current session of w to write text " + AppleScriptString("exec "+ShellQuote(path)) + "\n" +
		"end tell\n"
}

// Terminal apps with their own way in on macOS; any other name is opened
// like Terminal, with `open -a NAME script.command`.
const (
	AppTerminal = "Terminal"
	AppITerm    = "iTerm2"
	AppGhostty  = "Ghostty"
)

// Invocation is the one child process that opens a terminal window: its
// argv, and the text for its stdin (the AppleScript osascript reads).
type Invocation struct {
	Argv  []string
	Stdin string
}

// MacInvocation is how the app opens the script at path in app (the
// config key terminal; "" means Terminal). Every way is a child process,
// never NSAppleScript in the app: the Automation prompt that the first
// Apple Event raises blocks the thread that sent it, and the menu's main
// thread must never wait on a person.
//
//   - Terminal, and any app not listed: LaunchServices opens the document
//     (`open -a APP script.command`). No Apple Event, so no Automation
//     prompt and no entitlement.
//   - iTerm2: AppleScript (create window, write text) run by
//     /usr/bin/osascript, read from stdin so nothing is quoted twice on a
//     command line.
//   - Ghostty: `open -na Ghostty --args -e script`; Ghostty's command line
//     cannot open a window in a running instance, so -n starts one per
//     session.
func MacInvocation(app, path string) Invocation {
	switch strings.ToLower(strings.TrimSuffix(app, ".app")) {
	case "", "terminal":
		return Invocation{Argv: []string{"/usr/bin/open", "-a", AppTerminal, path}}
	case "iterm2", "iterm":
		return Invocation{Argv: []string{"/usr/bin/osascript", "-"}, Stdin: ITermScript(path)}
	case "ghostty":
		return Invocation{Argv: []string{"/usr/bin/open", "-na", AppGhostty, "--args", "-e", path}}
	}
	return Invocation{Argv: []string{"/usr/bin/open", "-a", app, path}}
}

// MacHint maps what a failed invocation printed to the one thing the user
// can do about it.
func MacHint(app, output string) string {
	if app == "" {
		app = AppTerminal
	}
	switch {
	case strings.Contains(output, "-1743"), strings.Contains(output, "Not authorized to send Apple events"):
		return "allow Corral to control " + app + " in System Settings › Privacy & Security › Automation, or set terminal = \"Terminal\" in ~/.corral/config.toml"
	case strings.Contains(output, "Unable to find application"), strings.Contains(output, "-10814"),
		strings.Contains(output, "-1728"), strings.Contains(output, "Can’t get application"), strings.Contains(output, "Can't get application"):
		return app + " is not installed: install it, or set terminal = \"Terminal\" in ~/.corral/config.toml"
	}
	return "set terminal in ~/.corral/config.toml to an installed terminal app (\"Terminal\", \"iTerm2\", \"Ghostty\")"
}
