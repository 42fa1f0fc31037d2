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
// dir/run/<random>.command with mode 0700 (dir/run is created 0700) and
// returns its path. The random name keeps the path free of characters that
// need quoting beyond dir itself.
func WriteCommandScript(dir string, argv []string) (string, error) {
	if len(argv) == 0 {
		return "", fmt.Errorf("writing terminal script: empty command")
	}
	run := filepath.Join(dir, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		return "", fmt.Errorf("creating script directory %s: %w", run, err)
	}
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", fmt.Errorf("naming terminal script: %w", err)
	}
	p := filepath.Join(run, "corral-"+hex.EncodeToString(rnd[:])+".command")
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
