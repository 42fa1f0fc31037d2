package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/spf13/cobra"
)

type env struct {
	home, proj, box string
}

func setup(t *testing.T, corralToml string) env {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "h")
	proj := filepath.Join(root, "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if corralToml != "" {
		if err := os.WriteFile(filepath.Join(proj, ".corral.toml"), []byte(corralToml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	proj, _ = filepath.EvalSymlinks(proj)
	p, err := project.Resolve(proj, filepath.Join(home, "lima"))
	if err != nil {
		t.Fatal(err)
	}
	return env{home: home, proj: proj, box: p.Box}
}

func run(t *testing.T, e env, tty bool, args ...string) (int, string, string) {
	t.Helper()
	io, _, out, errOut := Test(tty)
	f := &Factory{
		IO:        io,
		Layout:    func() (paths.Layout, error) { return paths.Layout{Home: e.home}, nil },
		Platform:  config.Platform{OS: "linux", Arch: "amd64"},
		LookupEnv: func(string) (string, bool) { return "", false },
	}
	code := Run(f, append([]string{"-C", e.proj}, args...))
	return code, out.String(), errOut.String()
}

func TestConfigCheckOK(t *testing.T) {
	e := setup(t, "network = \"offline\"\n")
	code, out, errOut := run(t, e, true, "config", "check")
	if code != 0 || out != "ok: box "+e.box+" config has no problems\n" || errOut != "" {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
}

func TestConfigCheckViolations(t *testing.T) {
	e := setup(t, "network = \"full\"\ngit_tokens = [\"github.com\"]\nnetwrok = 1\n")
	code, out, errOut := run(t, e, true, "config", "check")
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	file := filepath.Join(e.proj, ".corral.toml")
	trusted := filepath.Join(e.home, "projects", e.box+".toml")
	want := "3 problem(s) in the config of box " + e.box + ":\n\n" +
		file + ":3: netwrok: unknown key\n" +
		`  fix: did you mean "network"? keys are exact (case-sensitive)` + "\n\n" +
		file + `:1: network = "full": a repository may only tighten network (full < learn < broker < offline), and this loosens "broker"` + "\n" +
		"  fix: if you trust this repository, add to " + trusted + ":\n" +
		`       network = "full"` + "\n\n" +
		file + `:2: git_tokens = ["github.com"]: a repository may not set this (it widens host access)` + "\n" +
		"  fix: if you trust this repository, add to " + trusted + ":\n" +
		`       git_tokens = ["github.com"]` + "\n"
	if out != want {
		t.Errorf("output:\n%s\nwant:\n%s", out, want)
	}
	if errOut != "" {
		t.Errorf("stderr %q", errOut)
	}
}

func TestConfigCheckJSON(t *testing.T) {
	e := setup(t, "mounts = [{ location = \"/\" }]\n")
	code, out, _ := run(t, e, false, "config", "check", "--json")
	if code != 2 {
		t.Fatalf("exit %d", code)
	}
	var got struct {
		Box      string `json:"box"`
		OK       bool   `json:"ok"`
		Problems []struct{ File, Key, Reason string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err, out)
	}
	if got.Box != e.box || got.OK || len(got.Problems) != 1 || got.Problems[0].Key != "mounts" {
		t.Errorf("%+v", got)
	}
}

func TestBoxActingCommandRefusesWithExit2(t *testing.T) {
	e := setup(t, "git_tokens = [\"github.com\"]\n")
	code, out, errOut := run(t, e, false, "render")
	if code != 2 || out != "" || !strings.Contains(errOut, "corral: refusing: the config has problems:") || !strings.Contains(errOut, "git_tokens") {
		t.Fatalf("code %d out %q err %q", code, out, errOut)
	}
}

func TestMalformedProjectFile(t *testing.T) {
	e := setup(t, "cpus = \n")
	code, _, errOut := run(t, e, false, "config", "show")
	if code != 2 || !strings.Contains(errOut, filepath.Join(e.proj, ".corral.toml")+":1: ") {
		t.Fatalf("code %d err %q", code, errOut)
	}
}

func TestConfigShowOrigin(t *testing.T) {
	e := setup(t, "network = \"offline\"\n")
	code, out, _ := run(t, e, true, "config", "show", "--origin")
	if code != 0 {
		t.Fatal(code)
	}
	want := "# from " + filepath.Join(e.proj, ".corral.toml") + "\nnetwork = \"offline\"\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "# from default\ncpus = 2\n") {
		t.Errorf("output:\n%s", out)
	}
	if !strings.HasPrefix(out, "# box "+e.box+" for "+e.proj+"\n") {
		t.Errorf("header: %q", strings.SplitN(out, "\n", 2)[0])
	}
}

func TestConfigShowJSON(t *testing.T) {
	e := setup(t, "")
	code, out, _ := run(t, e, false, "config", "show", "--json", "--origin")
	if code != 0 {
		t.Fatal(code)
	}
	var got struct {
		Box    string              `json:"box"`
		Config map[string]any      `json:"config"`
		Origin map[string][]string `json:"origin"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Config["network"] != "broker" || got.Origin["network"][0] != "default" || got.Box != e.box {
		t.Errorf("%+v", got)
	}
}

func TestRender(t *testing.T) {
	e := setup(t, "")
	code, out, errOut := run(t, e, false, "render")
	if code != 0 {
		t.Fatal(code, errOut)
	}
	if !strings.Contains(out, "vmType: qemu\n") || !strings.Contains(out, "mountPoint: "+e.proj+"\n") {
		t.Errorf("render output:\n%s", out)
	}
	last := out[strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")+1:]
	if !strings.HasPrefix(last, "# template hash: sha256:") || len(strings.TrimSpace(last)) != len("# template hash: sha256:")+64 {
		t.Errorf("hash line %q", last)
	}
	_, out2, _ := run(t, e, false, "render")
	if out2 != out {
		t.Error("render is not stable")
	}
}

func TestVersion(t *testing.T) {
	e := setup(t, "")
	_, out, _ := run(t, e, true, "version")
	if !strings.Contains(out, "tested with Lima 2.2.0 and 1.2.2\n") {
		t.Errorf("%q", out)
	}
}

// TestCommandTree checks every command has Use, Short and an Example.
func TestCommandTree(t *testing.T) {
	io, _, _, _ := Test(false)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Use == "" || c.Short == "" {
			t.Errorf("%s: missing Use or Short", c.CommandPath())
		}
		if c.Runnable() && c.Example == "" && !c.Hidden {
			t.Errorf("%s: missing Example", c.CommandPath())
		}
		if strings.HasSuffix(c.Short, ".") {
			t.Errorf("%s: Short ends with a period", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(NewCmdRoot(&Factory{IO: io}))
}

// TestConfigCheckSanitises: repository text with escape sequences and bidi
// controls reaches the terminal escaped, in config check and in the
// refusal of a box-acting command.
func TestConfigCheckSanitises(t *testing.T) {
	e := setup(t, "\"\\u001b[2J\\u001b[Hok: no problems\" = 1\nnetwork = \"\\u001b[32mok\\u202e\"\n[env]\n\"A\\nok: fine TOKEN\" = \"\\u001b]0;title\\u0007\"\n")
	for _, args := range [][]string{{"config", "check"}, {"render"}} {
		code, out, errOut := run(t, e, true, args...)
		if code != 2 {
			t.Fatalf("%v: exit %d", args, code)
		}
		all := out + errOut
		for _, bad := range []string{"\x1b", "\u202e", "\a", "\nok: fine"} {
			if strings.Contains(all, bad) {
				t.Errorf("%v: output holds %q raw:\n%s", args, bad, all)
			}
		}
		if !strings.Contains(all, `\x1b[2J`) {
			t.Errorf("%v: the escaped key is not shown:\n%s", args, all)
		}
	}
}

func TestMalformedFileSanitised(t *testing.T) {
	e := setup(t, "network = \"ok\x1b[2J\n\x1b[Hok: no problems = \x1b[32m\n")
	for _, args := range [][]string{{"config", "check"}, {"render"}} {
		_, out, errOut := run(t, e, true, args...)
		if strings.Contains(out+errOut, "\x1b") {
			t.Errorf("%v: output holds ESC raw:\n%q", args, out+errOut)
		}
	}
}

func TestErrorHasOnePrefix(t *testing.T) {
	e := setup(t, "")
	code, _, errOut := run(t, e, false, "broker")
	if code != 1 || !strings.HasPrefix(errOut, "corral: broker: --listen is required") || strings.Count(errOut, "corral") != 1+strings.Count(errOut, "corral broker --") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestGroupCommandsRefuseUnknownSubcommands(t *testing.T) {
	e := setup(t, "")
	for _, group := range []string{"config", "golden", "snapshot", "secret", "completion"} {
		code, out, errOut := run(t, e, false, group, "bogus")
		if code == 0 || out != "" || !strings.HasPrefix(errOut, "corral: unknown command \"bogus\" for \"corral "+group+"\"\nhint: ") {
			t.Errorf("%s bogus: exit %d, out %q, err %q", group, code, out, errOut)
		}
		if code, out, _ := run(t, e, false, group); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%s alone: exit %d, out %q", group, code, out)
		}
	}
	if _, _, errOut := run(t, e, false, "config", "chek"); !strings.Contains(errOut, "hint: did you mean corral config check?") {
		t.Errorf("no suggestion: %q", errOut)
	}
}

// TestRepositoryRequestsFollowTheHint: a repository's egress is a request,
// not a violation: config check passes, says what is pending and the exact
// command to approve it; following that command makes the check clean; a
// changed file makes only its new entries pending again.
func TestRepositoryRequestsFollowTheHint(t *testing.T) {
	e := setup(t, "egress = [\"api.example.test\", \"*.cdn.example.test\"]\n")
	code, out, _ := run(t, e, false, "config", "check")
	file := filepath.Join(e.proj, ".corral.toml")
	want := "ok: box " + e.box + " config has no problems\n\n" +
		"notice: the repository requests 2 host(s), group(s) or port(s) for box " + e.box + "; they are not allowed until you approve them:\n" +
		"  egress api.example.test  (" + file + ":1)\n" +
		"  egress *.cdn.example.test  (" + file + ":1)\n" +
		"to review and allow them: corral approve " + e.box + "\n"
	if code != 0 || out != want {
		t.Fatalf("exit %d, out:\n%s\nwant:\n%s", code, out, want)
	}
	// The printed command, on a terminal: answer y to the first, n to the second.
	io, in, aout, aerr := Test(true)
	in.WriteString("y\nn\n")
	f := &Factory{IO: io, Layout: func() (paths.Layout, error) { return paths.Layout{Home: e.home}, nil },
		Platform: config.Platform{OS: "linux", Arch: "amd64"}, LookupEnv: func(string) (string, bool) { return "", false }}
	if code := Run(f, []string{"-C", e.proj, "approve", e.box}); code != 0 {
		t.Fatalf("approve: exit %d, %s %s", code, aout, aerr)
	}
	trusted, _ := os.ReadFile(filepath.Join(e.home, "projects", e.box+".toml"))
	if !strings.Contains(string(trusted), "egress = [\"api.example.test\"]\n") || !strings.Contains(string(trusted), "(sha256:") {
		t.Errorf("trusted layer:\n%s", trusted)
	}
	_, out, _ = run(t, e, false, "config", "check")
	if !strings.Contains(out, "requests 1 host(s)") || !strings.Contains(out, "*.cdn.example.test") || strings.Contains(out, "egress api.example.test") {
		t.Errorf("after approving one:\n%s", out)
	}
	if code, _, _ := run(t, e, false, "approve", "--yes"); code != 0 {
		t.Fatal("approve --yes")
	}
	if code, out, _ := run(t, e, false, "config", "check"); code != 0 || out != "ok: box "+e.box+" config has no problems\n" {
		t.Errorf("after following the hint: exit %d\n%s", code, out)
	}
	// The file changes: its new entry is pending, the approved ones stay.
	if err := os.WriteFile(file, []byte("egress = [\"api.example.test\", \"new.example.test\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, out, _ = run(t, e, false, "config", "check")
	if !strings.Contains(out, "requests 1 host(s)") || !strings.Contains(out, "new.example.test") {
		t.Errorf("after the file changed:\n%s", out)
	}
	// Without a terminal and without --yes, approve asks for a decision.
	if code, _, errOut := run(t, e, false, "approve"); code == 0 || !strings.Contains(errOut, "no terminal to ask") {
		t.Errorf("approve without a terminal: exit %d %q", code, errOut)
	}
}

// TestHelpGroupsEveryCommand: `corral --help` lists every visible command
// under a heading (sessions, boxes, egress and approvals, config,
// maintenance), none under cobra's "Additional Commands".
func TestHelpGroupsEveryCommand(t *testing.T) {
	io, _, out, _ := Test(false)
	root := NewCmdRoot(&Factory{IO: io})
	root.SetArgs([]string{"--help"})
	root.SetOut(out)
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		if c.GroupID == "" {
			t.Errorf("%s is in no group of corral --help", c.Name())
		}
	}
	help := out.String()
	if strings.Contains(help, "Additional Commands") {
		t.Errorf("commands outside the groups:\n%s", help)
	}
	last := -1
	for _, h := range []string{"Sessions in a project's box:", "Boxes:", "Egress and approvals:", "Config and secrets:", "Maintenance:"} {
		i := strings.Index(help, h)
		if i < last {
			t.Errorf("heading %q missing or out of order:\n%s", h, help)
		}
		last = i
	}
	for _, c := range []string{"  claude ", "  up ", "  approve ", "  doctor ", "  completion "} {
		if !strings.Contains(help, c) {
			t.Errorf("help lacks %q", c)
		}
	}
}
