package terminal

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	argv := []string{"/opt/corral", "shell", "web box", "it's"}
	tests := []struct {
		name       string
		configured string
		env        map[string]string
		onPath     []string
		want       []string
		wantNone   bool
	}{
		{name: "config wins", configured: "alacritty", env: map[string]string{"TERMINAL": "kitty"}, onPath: []string{"alacritty", "kitty"},
			want: []string{"/bin/alacritty", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "config missing falls through", configured: "Terminal", onPath: []string{"xterm"},
			want: []string{"/bin/xterm", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "TERMINAL wins", env: map[string]string{"TERMINAL": "kitty"}, onPath: []string{"kitty", "xterm"},
			want: []string{"/bin/kitty", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "TERMINAL missing falls through", env: map[string]string{"TERMINAL": "nope"}, onPath: []string{"xdg-terminal-exec", "xterm"},
			want: []string{"/bin/xdg-terminal-exec", "/opt/corral", "shell", "web box", "it's"}},
		{name: "debian alternative", onPath: []string{"x-terminal-emulator", "gnome-terminal"},
			want: []string{"/bin/x-terminal-emulator", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "gnome", onPath: []string{"gnome-terminal", "xterm"},
			want: []string{"/bin/gnome-terminal", "--", "/opt/corral", "shell", "web box", "it's"}},
		{name: "konsole", onPath: []string{"konsole"}, want: []string{"/bin/konsole", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "xterm last", onPath: []string{"xterm"}, want: []string{"/bin/xterm", "-e", "/opt/corral", "shell", "web box", "it's"}},
		{name: "none", wantNone: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			look := func(name string) (string, error) {
				for _, p := range tc.onPath {
					if p == name {
						return "/bin/" + name, nil
					}
				}
				return "", exec.ErrNotFound
			}
			got, err := Resolve(LinuxCandidates(tc.configured, func(k string) string { return tc.env[k] }), look, argv)
			if tc.wantNone {
				if !errors.Is(err, ErrNoTerminal) {
					t.Fatalf("err = %v, want ErrNoTerminal", err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestCommandScriptGolden(t *testing.T) {
	argv := []string{"/Applications/Corral.app/Contents/MacOS/corral", "claude", "web-3f2a1c",
		"it's", `"dq" $HOME`, "a b", "`id`", "semi;colon", "", "new\nline", "ok_plain-1.2"}
	want := `#!/bin/zsh -l
# Written by corral to open one command in a new terminal window.
rm -f -- "$0"
exec /Applications/Corral.app/Contents/MacOS/corral claude web-3f2a1c 'it'\''s' '"dq" $HOME' 'a b' '` + "`id`" + `' 'semi;colon' '' 'new
line' ok_plain-1.2
`
	if got := string(CommandScript(argv)); got != want {
		t.Fatalf("script:\n%s\nwant:\n%s", got, want)
	}
}

// The quoting must survive a real shell: run the script body with sh and
// compare the argv the command receives.
func TestCommandScriptRoundTrip(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	dir := t.TempDir()
	args := []string{"it's", `"dq" $HOME`, "a b", "`id`", "semi;colon", "", "new\nline", "*", "~"}
	printer := filepath.Join(dir, "printargs")
	if err := os.WriteFile(printer, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run") // the app passes ~/.corral/run
	p, err := WriteCommandScript(run, append([]string{printer}, args...))
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o700 || !strings.HasSuffix(p, ".command") {
		t.Fatalf("script %s: mode %v, %v", p, fi.Mode(), err)
	}
	if filepath.Dir(p) != run {
		t.Errorf("script %s is not directly in %s", p, run)
	}
	if di, _ := os.Stat(filepath.Dir(p)); di.Mode().Perm() != 0o700 {
		t.Errorf("run dir mode %v, want 0700", di.Mode().Perm())
	}
	out, err := exec.Command("sh", p).Output() // sh ignores the zsh shebang
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !reflect.DeepEqual(got, args) {
		t.Fatalf("argv = %q, want %q", got, args)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("script not removed after running: %v", err)
	}
}

func TestITermScriptGolden(t *testing.T) {
	got := ITermScript(`/Users/a "b"/Library/Application Support/corral/run/corral-00.command`)
	want := "tell application \"iTerm2\"\n\tactivate\n\tset w to (create window with default profile)\n" +
		"\ttell current session of w to write text \"exec '/Users/a \\\"b\\\"/Library/Application Support/corral/run/corral-00.command'\"\n" +
		"end tell\n"
	if got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestMacInvocation(t *testing.T) {
	const p = "/Users/a b/.corral/run/corral-00.command"
	for _, tc := range []struct {
		app   string
		argv  []string
		stdin bool
	}{
		{"", []string{"/usr/bin/open", "-a", "Terminal", p}, false},
		{"Terminal", []string{"/usr/bin/open", "-a", "Terminal", p}, false},
		{"terminal.app", []string{"/usr/bin/open", "-a", "Terminal", p}, false},
		{"iTerm2", []string{"/usr/bin/osascript", "-"}, true},
		{"iTerm", []string{"/usr/bin/osascript", "-"}, true},
		{"Ghostty", []string{"/usr/bin/open", "-na", "Ghostty", "--args", "-e", p}, false},
		{"WezTerm", []string{"/usr/bin/open", "-a", "WezTerm", p}, false},
	} {
		inv := MacInvocation(tc.app, p)
		if !reflect.DeepEqual(inv.Argv, tc.argv) || (inv.Stdin != "") != tc.stdin {
			t.Errorf("%q: %+v, want argv %q stdin %v", tc.app, inv, tc.argv, tc.stdin)
		}
		if tc.stdin && inv.Stdin != ITermScript(p) {
			t.Errorf("%q: stdin is not the iTerm2 script", tc.app)
		}
	}
}

func TestMacHint(t *testing.T) {
	for _, tc := range []struct{ app, out, want string }{
		{"iTerm2", "execution error: Not authorized to send Apple events to iTerm2. (-1743)", "Privacy & Security › Automation"},
		{"Ghostty", "Unable to find application named 'Ghostty'", "Ghostty is not installed"},
		{"iTerm2", "execution error: Can’t get application \"iTerm2\". (-1728)", "iTerm2 is not installed"},
		{"", "something else", `set terminal in ~/.corral/config.toml`},
	} {
		if got := MacHint(tc.app, tc.out); !strings.Contains(got, tc.want) {
			t.Errorf("MacHint(%q, %q) = %q, want %q in it", tc.app, tc.out, got, tc.want)
		}
	}
}
