package app

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestTerminalApp(t *testing.T) {
	g := filepath.Join(t.TempDir(), "config.toml")
	if got := terminalApp(g, nil); got != "" {
		t.Errorf("no config: %q", got)
	}
	for data, want := range map[string]string{
		`terminal = "iTerm2"`:    "iTerm2",
		`terminal = "/bin/sh"`:   "", // not a name: the default
		`terminal = `:            "", // does not parse: the default
		`idle_stop = "10m"`:      "",
		"terminal = \"Ghostty\"": "Ghostty",
	} {
		if err := os.WriteFile(g, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := terminalApp(g, nil); got != want {
			t.Errorf("%s: terminalApp = %q, want %q", data, got, want)
		}
	}
}

type hinted struct{ error }

func (hinted) Hint() string { return "allow Corral in Automation" }

func TestErrorTextHint(t *testing.T) {
	if got, want := errorText("open terminal", hinted{errors.New("osascript: exit status 1")}), "open terminal: osascript: exit status 1\nallow Corral in Automation"; got != want {
		t.Errorf("errorText = %q, want %q", got, want)
	}
	if got, want := errorText("stop web", errors.New("boom")), "stop web: boom"; got != want {
		t.Errorf("errorText = %q, want %q", got, want)
	}
}
