package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/version"
)

func mustHost(t testing.TB, name, url, corral, cfg string) Host {
	t.Helper()
	h, err := NewHost(name, url, corral, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestSSHArgv(t *testing.T) {
	for _, tc := range []struct {
		h    Host
		inv  Invocation
		want []string
	}{
		{mustHost(t, "t", "ssh://h", "", ""), Invocation{Args: []string{"ls"}},
			[]string{"-T", "-e", "none", "--", "h", `'corral' --host local 'ls'`}},
		{mustHost(t, "t", "ssh://me@h:2222", "/opt/c b/corral", "/etc/corral/ssh_config"), Invocation{Args: []string{"run", "--", "sh", "-c", "echo 'hi' $HOME; rm -rf /"}, TTY: true},
			[]string{"-F", "/etc/corral/ssh_config", "-p", "2222", "-t", "-e", "none", "--", "me@h",
				`'/opt/c b/corral' --host local 'run' '--' 'sh' '-c' 'echo '\''hi'\'' $HOME; rm -rf /'`}},
		{mustHost(t, "t", "ssh://me@[::1]:22", "", ""), Invocation{},
			[]string{"-p", "22", "-T", "-e", "none", "--", "me@::1", `'corral' --host local`}},
	} {
		if got := SSHArgv(tc.h, tc.inv); !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v:\n got %q\nwant %q", tc.h.URL, tc.inv, got, tc.want)
		}
	}
}

// shWords runs cmdline through a real POSIX shell the way sshd does
// (sh -c) and returns the words the shell made of it.
func shWords(t testing.TB, cmdline string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", `set -- `+cmdline+`; for a; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	words := strings.Split(string(out), "\x00")
	return words[:len(words)-1]
}

// TestRemoteCommandThroughSh: the remote shell turns the command line
// back into exactly corral's argv, whatever the arguments hold (quotes,
// $, `, ;, newlines, globs, control bytes, leading dashes, empty words).
func TestRemoteCommandThroughSh(t *testing.T) {
	h := mustHost(t, "t", "ssh://h", "/opt/it's/corral", "")
	args := []string{"run", "--", "", "'", `'\''`, "$(id)", "`id`", "a;b", "a\nb", "*", "~", "-e", "\x01\x1b[31m", `\`, `"`, "é", "$HOME", "!x", "a b\tc"}
	want := append([]string{"/opt/it's/corral", "--host", "local"}, args...)
	if got := shWords(t, RemoteCommand(h, args)); !slices.Equal(got, want) {
		t.Errorf("sh read\n %q\nwant\n %q", got, want)
	}
	// The class: random byte strings (no NUL, which argv cannot hold).
	prop := func(a, b string) bool {
		a, b = strings.ReplaceAll(a, "\x00", ""), strings.ReplaceAll(b, "\x00", "")
		got := shWords(t, RemoteCommand(h, []string{a, b}))
		return slices.Equal(got, []string{h.Corral, "--host", "local", a, b})
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 200}); err != nil {
		t.Error(err)
	}
}

// unquote is a reference reader of what Quote writes: one word of
// single-quoted runs and \' between them.
func unquote(s string) (string, bool) {
	var b strings.Builder
	for s != "" {
		switch {
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[end+2:]
		default:
			return "", false
		}
	}
	return b.String(), true
}

// FuzzQuote: a quoted word reads back as itself, and it is one word (it
// starts and ends with a quote, so nothing of it is outside one).
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "'", "a'b", "$(x)", "\n", `\'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := Quote(s)
		if !strings.HasPrefix(q, "'") || !strings.HasSuffix(q, "'") {
			t.Fatalf("%q: %q is not enclosed", s, q)
		}
		if got, ok := unquote(q); !ok || got != s {
			t.Fatalf("%q: %q reads back as %q (%v)", s, q, got, ok)
		}
	})
}

// fakeSSH answers the version check with out and code, and records argv.
type fakeSSH struct {
	out    string
	code   int
	stderr string
	calls  [][]string
}

func (f *fakeSSH) exec(_ context.Context, name string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	f.calls = append(f.calls, append([]string{name}, argv...))
	if strings.HasSuffix(argv[len(argv)-1], `'version' '--json'`) {
		io.WriteString(stdout, f.out)
		io.WriteString(stderr, f.stderr)
		return f.code, nil
	}
	if stdin != nil {
		io.Copy(stdout, stdin)
	}
	return 3, nil
}

func withVersion(t *testing.T, v, c string) {
	t.Helper()
	ov, oc := version.Version, version.Commit
	version.Version, version.Commit = v, c
	t.Cleanup(func() { version.Version, version.Commit = ov, oc })
}

func TestCheckVersion(t *testing.T) {
	withVersion(t, "1.4.0", "abc123")
	h := mustHost(t, "gpu", "ssh://me@h", "", "")
	ctx := context.Background()

	same := &fakeSSH{out: `{"version":"1.4.0","commit":"abc123","go":"go1.25"}` + "\n"}
	r := Runner{SSH: "/usr/bin/ssh", Exec: same.exec}
	var out bytes.Buffer
	code, err := r.Run(ctx, h, Invocation{Args: []string{"run", "--", "cat"}}, strings.NewReader("in"), &out, io.Discard)
	if err != nil || code != 3 || out.String() != "in" {
		t.Fatalf("same version: %d, %v, %q", code, err, out.String())
	}
	if len(same.calls) != 2 || same.calls[0][0] != "/usr/bin/ssh" || !strings.HasSuffix(same.calls[1][len(same.calls[1])-1], `'run' '--' 'cat'`) {
		t.Errorf("calls %q", same.calls)
	}

	for _, tc := range []struct {
		name string
		ssh  fakeSSH
		want string
		is   error
	}{
		{"other version", fakeSSH{out: `{"version":"1.3.9","commit":"abc123"}`}, "host gpu runs corral 1.3.9 (commit abc123), this is corral 1.4.0 (commit abc123): refusing to run a command there", nil},
		{"other commit", fakeSSH{out: `{"version":"1.4.0","commit":"fff"}`}, "host gpu runs corral 1.4.0 (commit fff), this is corral 1.4.0 (commit abc123)", nil},
		{"unreachable", fakeSSH{code: 255, stderr: "ssh: connect to host h port 22: Connection refused\n"}, "host gpu (ssh://me@h): cannot reach the host over ssh: ssh: connect to host h port 22: Connection refused", ErrUnreachable},
		{"not installed", fakeSSH{code: 127, stderr: "sh: 1: corral: not found\n"}, "host gpu: corral is not installed there (sh: 1: corral: not found)", nil},
		{"not corral", fakeSSH{out: "hello\n"}, "printed no version", nil},
		{"fails", fakeSSH{code: 2, stderr: "boom\nmore"}, "exited 2: boom", nil},
	} {
		f := tc.ssh
		_, err := Runner{Exec: f.exec}.Run(ctx, h, Invocation{Args: []string{"ls"}}, nil, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if len(f.calls) != 1 {
			t.Errorf("%s: the command ran after a failed check: %q", tc.name, f.calls)
		}
		var vm *VersionMismatchError
		if errors.As(err, &vm) && !strings.Contains(strings.Join(hint.All(err), "\n"), "install corral 1.4.0 on gpu") {
			t.Errorf("%s: hint %q", tc.name, hint.All(err))
		}
	}
}

func TestStripHostFlag(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"--host", "t", "ls"}, []string{"ls"}},
		{[]string{"--host=t", "ls", "--json"}, []string{"ls", "--json"}},
		{[]string{"-C", "/p", "run", "--host", "t", "--", "x", "--host", "y"}, []string{"-C", "/p", "run", "--", "x", "--host", "y"}},
		{[]string{"run", "--", "--host=t"}, []string{"run", "--", "--host=t"}},
		{[]string{"ls"}, []string{"ls"}},
	} {
		if got := StripHostFlag(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}
