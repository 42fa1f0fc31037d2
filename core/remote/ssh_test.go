package remote

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
		{mustHost(t, "t", "ssh://h", "", ""), Invocation{Args: []string{"ls", "--json"}, Batch: true},
			[]string{"-T", "-o", "BatchMode=yes", "-e", "none", "--", "h", `'corral' --host local 'ls' '--json'`}},
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

// Output: stdout within the cap, or an error naming what went wrong; the
// reason of a failed corral is its "corral: " line, not its progress or
// its hints.
func TestOutput(t *testing.T) {
	h := mustHost(t, "gpu", "ssh://me@h", "", "")
	ctx := context.Background()
	run := func(out, errOut string, code int) ([]byte, error) {
		f := func(_ context.Context, _ string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
			if stdin != nil || argv[len(argv)-1] != `'corral' --host local 'ls' '--json'` || !slices.Contains(argv, "BatchMode=yes") {
				t.Errorf("argv %q, stdin %v", argv, stdin)
			}
			io.WriteString(stdout, out)
			io.WriteString(stderr, errOut)
			return code, nil
		}
		return Runner{Exec: f, Batch: true}.Output(ctx, h, []string{"ls", "--json"}, 8)
	}
	if b, err := run("[1,2,3]\n", "", 0); err != nil || string(b) != "[1,2,3]\n" {
		t.Errorf("ok: %q %v", b, err)
	}
	if _, err := run("[1,2,3,4]\n", "", 0); !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("over the cap: %v", err)
	}
	if _, err := run("", "ssh: connect to host h port 22: Connection refused\n", 255); !errors.Is(err, ErrUnreachable) ||
		err.Error() != `host gpu (ssh://me@h): cannot reach the host over ssh: "ssh: connect to host h port 22: Connection refused"` {
		t.Errorf("unreachable: %v", err)
	}
	if _, err := run("", "starting\ncorral: box web: \x1b[2Jgone\nhint: corral ls\n", 1); err == nil ||
		err.Error() != `host gpu: corral ls exited 1: "box web: \x1b[2Jgone"` {
		t.Errorf("failure: %v", err)
	}
}

// The cap holds for a real process too: exec copies a pipe with io.Copy,
// which would use a writer's ReadFrom (an embedded bytes.Buffer's reads
// everything) instead of its Write.
func TestOutputCapWithRealProcess(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "ssh")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nhead -c 3000000 /dev/zero\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	h := mustHost(t, "gpu", "ssh://me@h", "", "")
	_, err := Runner{SSH: bin}.Output(context.Background(), h, []string{"ls"}, 1<<20)
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Errorf("3 MB through a 1 MiB cap: %v", err)
	}
	var c capped
	c.max = 10
	if n, err := io.Copy(&c, strings.NewReader(strings.Repeat("x", 100))); n != 100 || err != nil || len(c.Bytes()) != 10 || !c.over {
		t.Errorf("io.Copy into capped: %d %v, kept %d", n, err, len(c.Bytes()))
	}
}
