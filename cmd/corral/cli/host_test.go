package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/version"
)

// fakeRemote records the ssh argv a forwarded command runs and answers
// the version check with this binary's version.
type fakeRemote struct {
	calls [][]string
	code  int
}

func (r *fakeRemote) exec(_ context.Context, name string, argv []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	r.calls = append(r.calls, argv)
	if strings.HasSuffix(argv[len(argv)-1], `'version' '--json'`) {
		io.WriteString(stdout, `{"version":"`+version.Version+`","commit":"`+version.Commit+`","run_dir":"/home/me/.corral/run"}`)
		return 0, nil
	}
	io.WriteString(stdout, "remote out\n")
	return r.code, nil
}

func hostFactory(t *testing.T, home string, tty bool) (*Factory, *fakeRemote, func() (string, string)) {
	t.Helper()
	io, _, out, errOut := Test(tty)
	fr := &fakeRemote{}
	f := &Factory{
		IO:        io,
		Layout:    func() (paths.Layout, error) { return paths.Layout{Home: home}, nil },
		LookupEnv: func(string) (string, bool) { return "", false },
		Remote:    remote.Runner{Exec: fr.exec},
	}
	return f, fr, func() (string, string) { return out.String(), errOut.String() }
}

func TestHostAddLsRm(t *testing.T) {
	home := t.TempDir()
	f, _, out := hostFactory(t, home, false)
	code := Run(f, []string{"host", "add", "gpu", "ssh://me@gpu.internal:2222", "--corral", "/opt/corral/bin/corral"})
	o, e := out()
	check(t, code, o, e, 0, "host gpu: ssh://me@gpu.internal:2222 added to "+filepath.Join(home, "hosts.toml")+"\n", "")

	f, _, out = hostFactory(t, home, false)
	code = Run(f, []string{"host", "ls"})
	o, e = out()
	check(t, code, o, e, 0, "gpu\tssh://me@gpu.internal:2222\t/opt/corral/bin/corral\t-\tnone\n", "")

	f, _, out = hostFactory(t, home, true)
	code = Run(f, []string{"host", "ls"})
	o, e = out()
	check(t, code, o, e, 0, "NAME  URL                         CORRAL                  SSH CONFIG  CREDENTIALS\ngpu   ssh://me@gpu.internal:2222  /opt/corral/bin/corral  -           none\n", "")

	for _, bad := range [][]string{
		{"host", "add", "-x", "ssh://h"},
		{"host", "add", "x", "ssh://-oProxyCommand=touch /tmp/p"},
		{"host", "add", "x", "ssh://h y"},
		{"host", "add", "x", "ssh://h\x1b[2J"},
		{"host", "add", "local", "ssh://h"},
		{"host", "add", "gpu", "ssh://other"},
	} {
		f, _, out = hostFactory(t, home, false)
		if code := Run(f, bad); code != 1 {
			o, e := out()
			t.Errorf("%q: exit %d, %q %q", bad, code, o, e)
		}
	}

	f, _, out = hostFactory(t, home, false)
	code = Run(f, []string{"host", "rm", "gpu"})
	o, e = out()
	check(t, code, o, e, 0, "host gpu removed from "+filepath.Join(home, "hosts.toml")+"\n", "")
}

// TestHostGrantRevoke (issue 35): a host may use none of this machine's
// credentials until corral host grant names them; host ls (and --json)
// shows what each may use; revoke takes a grant back; each change is in
// the audit log; bad names and unknown hosts are refused.
func TestHostGrantRevoke(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://me@gpu")
	run := func(args ...string) (int, string, string) {
		f, _, out := hostFactory(t, home, false)
		code := Run(f, args)
		o, e := out()
		return code, o, e
	}
	code, o, e := run("host", "grant", "gpu", "openai", "anthropic")
	check(t, code, o, e, 0, "host gpu may use: anthropic,openai\n", "")
	code, o, e = run("host", "grant", "gpu", "github")
	check(t, code, o, e, 0, "host gpu may use: anthropic,github,openai\n", "")
	code, o, e = run("host", "ls")
	check(t, code, o, e, 0, "gpu\tssh://me@gpu\tcorral\t-\tanthropic,github,openai\n", "")
	code, o, e = run("host", "revoke", "gpu", "openai", "github")
	check(t, code, o, e, 0, "host gpu may use: anthropic\n", "")
	code, o, e = run("host", "ls", "--json")
	if code != 0 || !strings.Contains(o, `"schema": "corral.hosts/v1"`) || !strings.Contains(o, `"credentials": [`) || !strings.Contains(o, `"anthropic"`) {
		t.Errorf("ls --json: %d %q %q", code, o, e)
	}
	for _, bad := range [][]string{
		{"host", "grant", "gpu", "Bad/Name"},
		{"host", "grant", "gpu", "a", "a"},
		{"host", "grant", "nope", "anthropic"},
		{"host", "grant", "gpu"},
	} {
		if code, o, e := run(bad...); code == 0 {
			t.Errorf("%q: exit 0, %q %q", bad, o, e)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, "logs", "audit.jsonl"))
	if err != nil || !strings.Contains(string(b), `"op":"grant"`) || !strings.Contains(string(b), `"op":"revoke"`) {
		t.Errorf("audit log: %v\n%s", err, b)
	}
	// Replacing the host drops its grants: a host that now points
	// elsewhere uses no key until granted again.
	code, o, e = run("host", "add", "--force", "gpu", "ssh://me@other")
	if code != 0 {
		t.Fatal(o, e)
	}
	code, o, e = run("host", "ls")
	check(t, code, o, e, 0, "gpu\tssh://me@other\tcorral\t-\tnone\n", "")
}

func addHost(t *testing.T, home, name, url string) {
	t.Helper()
	f, _, out := hostFactory(t, home, false)
	if code := Run(f, []string{"host", "add", name, url}); code != 0 {
		t.Fatal(out())
	}
}

// TestHostForwards: a box command with --host runs the remote corral with
// the same argv (less --host, plus --host local), each word quoted, -T
// without a terminal and -t with one, and its exit code passes through.
func TestHostForwards(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://me@gpu:2222")
	f, fr, out := hostFactory(t, home, false)
	fr.code = 7
	code := Run(f, []string{"-C", "/srv/src/web", "run", "--host", "gpu", "--", "sh", "-c", "echo 'hi'; exit 3"})
	o, e := out()
	check(t, code, o, e, 7, "remote out\n", "")
	want := [][]string{
		{"-p", "2222", "-T", "-e", "none", "--", "me@gpu", `'corral' --host local 'version' '--json'`},
		{"-p", "2222", "-T", "-e", "none", "--", "me@gpu", `'corral' --host local '-C' '/srv/src/web' 'run' '--' 'sh' '-c' 'echo '\''hi'\''; exit 3'`},
	}
	if !slices.EqualFunc(fr.calls, want, slices.Equal) {
		t.Errorf("ssh argv\n %q\nwant\n %q", fr.calls, want)
	}

	f, fr, _ = hostFactory(t, home, true)
	if code := Run(f, []string{"--host=gpu", "ls"}); code != 0 || len(fr.calls) != 2 || !slices.Contains(fr.calls[1], "-t") {
		t.Errorf("tty: exit %d, %q", code, fr.calls)
	}
}

// TestHostLocalOnly: this machine's commands refuse --host, and so does
// pull outside a git repository (before ssh runs); --host local runs here.
func TestHostLocalOnly(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://gpu")
	for _, args := range [][]string{
		{"--host", "gpu", "secret", "get", "--service", "s", "--account", "a"},
		{"--host", "gpu", "host", "ls"},
		{"--host", "gpu", "app"},
		{"--host", "gpu", "pull"},
	} {
		f, fr, out := hostFactory(t, home, false)
		code := Run(f, args)
		o, e := out()
		if code != 1 || len(fr.calls) != 0 || o != "" || !strings.Contains(e, "gpu") {
			t.Errorf("%q: exit %d, ssh %q, %q %q", args, code, fr.calls, o, e)
		}
	}
	f, fr, out := hostFactory(t, home, false)
	code := Run(f, []string{"--host", "local", "version", "--json"})
	if o, _ := out(); code != 0 || len(fr.calls) != 0 || !strings.Contains(o, `"version"`) {
		t.Errorf("--host local: exit %d, ssh %q, %q", code, fr.calls, o)
	}
	f, fr, out = hostFactory(t, home, false)
	code = Run(f, []string{"--host", "nope", "ls"})
	if o, e := out(); code != 1 || len(fr.calls) != 0 || !strings.Contains(e, "host nope: unknown host") {
		t.Errorf("unknown host: exit %d, %q %q", code, o, e)
	}
}

// TestProjectHostKey: host = "NAME" in the box's trusted layer sends its
// box commands there; --host local overrides it.
func TestProjectHostKey(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://gpu")
	proj := t.TempDir()
	l := paths.Layout{Home: home}
	p, err := project.Resolve(proj, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.ProjectsDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.ProjectConfig(p.Box), []byte("host = \"gpu\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, fr, _ := hostFactory(t, home, false)
	if code := Run(f, []string{"-C", proj, "sessions"}); code != 0 || len(fr.calls) != 2 {
		t.Errorf("host key: exit %d, ssh %q", code, fr.calls)
	}
	// A project command needs -C on the host: here -C is the local
	// project, which the host key came from, and the host has no copy.
	t.Chdir(proj)
	f, fr, out := hostFactory(t, home, false)
	code := Run(f, []string{"info"})
	if o, e := out(); code != 1 || len(fr.calls) != 0 || !strings.Contains(e, "corral info on host gpu needs -C") {
		t.Errorf("project command without -C: exit %d, ssh %q, %q %q", code, fr.calls, o, e)
	}
	f, fr, _ = hostFactory(t, home, false)
	Run(f, []string{"-C", proj, "--host", "local", "version"})
	if len(fr.calls) != 0 {
		t.Errorf("--host local forwarded: %q", fr.calls)
	}
	// A repository cannot choose the host: its .corral.toml is not read
	// for it, and loading it refuses the key.
	proj2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(proj2, ".corral.toml"), []byte("host = \"gpu\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, fr, _ = hostFactory(t, home, false)
	Run(f, []string{"-C", proj2, "version"})
	if len(fr.calls) != 0 {
		t.Errorf("a repository's host key forwarded: %q", fr.calls)
	}
}

// TestScopesCoverTheTree: every top-level command has a place in
// remote's one list of where commands run, so a new command is classified
// on purpose.
func TestScopesCoverTheTree(t *testing.T) {
	io, _, _, _ := Test(false)
	root := NewCmdRoot(&Factory{IO: io})
	known := map[string]bool{}
	for _, s := range []remote.Scope{remote.ScopeLocal, remote.ScopeHost, remote.ScopeProject, remote.ScopeBoth} {
		for _, n := range remote.Commands(s) {
			known[n] = true
		}
	}
	for _, c := range root.Commands() {
		if !known[c.Name()] {
			t.Errorf("corral %s: not in core/remote's scopes", c.Name())
		}
	}
}

// TestHostRelaysCredentials: a session forwarded to a host carries this
// machine's credential relay when this machine's config names a
// credential it can read: ssh forwards the relay's socket into the
// host's run directory, the remote corral gets the socket and the token
// as hidden flags, and no key is anywhere in ssh's argv. Other commands,
// and sessions with nothing to relay, carry none; the relay is gone when
// the command ends.
func TestHostRelaysCredentials(t *testing.T) {
	home := t.TempDir()
	addHost(t, home, "gpu", "ssh://me@gpu")
	const key = "ghp_laptop_only_0123456789"
	cfg := "[credentials.gh]\nupstream = \"https://git.example.test\"\nheader = \"basic\"\nenv_from_host = \"GH_TOK\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	f, fr, out := hostFactory(t, home, false)
	f.LookupEnv = func(n string) (string, bool) { return key, n == "GH_TOK" }
	if code := Run(f, []string{"--host", "gpu", "-C", "/srv/web", "claude"}); code != 0 {
		t.Fatal(out())
	}
	argv := fr.calls[1]
	i := slices.Index(argv, "-R")
	if i < 0 || !slices.Contains(argv, "ExitOnForwardFailure=yes") {
		t.Fatalf("no forward in %q", argv)
	}
	remoteSock, local, _ := strings.Cut(argv[i+1], ":")
	if !strings.HasPrefix(remoteSock, "/home/me/.corral/run/relay-") || !strings.HasPrefix(local, filepath.Join(home, "run", "relay-")) {
		t.Errorf("forward %q", argv[i+1])
	}
	last := argv[len(argv)-1]
	if !strings.HasPrefix(last, `'corral' --host local --credential-relay '`+remoteSock+`' --credential-relay-token '`) || !strings.HasSuffix(last, `'-C' '/srv/web' 'claude'`) {
		t.Errorf("remote command %q", last)
	}
	if strings.Contains(strings.Join(argv, " "), key) {
		t.Error("the key is in ssh's argv")
	}
	if _, err := os.Stat(filepath.Dir(local)); !os.IsNotExist(err) {
		t.Errorf("the relay outlived the command: %v", err)
	}

	// Not a session: no relay.
	f, fr, _ = hostFactory(t, home, false)
	f.LookupEnv = func(n string) (string, bool) { return key, n == "GH_TOK" }
	if code := Run(f, []string{"--host", "gpu", "-C", "/srv/web", "info"}); code != 0 || slices.Contains(fr.calls[1], "-R") {
		t.Errorf("info: exit %d, %q", code, fr.calls)
	}
	// Nothing this machine can read: no relay.
	f, fr, _ = hostFactory(t, home, false)
	if code := Run(f, []string{"--host", "gpu", "-C", "/srv/web", "shell"}); code != 0 || slices.Contains(fr.calls[1], "-R") {
		t.Errorf("shell without the key: exit %d, %q", code, fr.calls)
	}
	// The hidden flags are corral's to set on the host.
	f, fr, _ = hostFactory(t, home, false)
	if code := Run(f, []string{"--host", "gpu", "-C", "/srv/web", "--credential-relay", "/tmp/x", "run", "true"}); code == 0 || len(fr.calls) != 0 {
		t.Errorf("hidden flag on a forwarded command: exit %d, %q", code, fr.calls)
	}
}
