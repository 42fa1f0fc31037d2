package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const testHostMem = 16 << 30

// newProject makes a project dir holding .corral.toml with data, plus a
// symlink that escapes (link-out -> a dir outside) and one that stays in.
func newProject(t testing.TB, data []byte) string {
	t.Helper()
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{proj, outside, filepath.Join(proj, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(proj, "link-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(proj, "sub"), filepath.Join(proj, "link-in")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, ProjectFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	real, _ := filepath.EvalSymlinks(proj)
	return real
}

func request(projectDir, global string) Request {
	return Request{
		Platform:    Platform{OS: "linux", Arch: "amd64"},
		ProjectDir:  projectDir,
		GlobalPath:  global,
		TrustedPath: "/home/u/.corral/projects/proj-abc123.toml",
		HostMemory:  testHostMem,
		HostCPUs:    8,
	}
}

func TestHostileCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/hostile/*.toml")
	if len(files) < 25 {
		t.Fatalf("corpus has %d files, want at least 25", len(files))
	}
	global, _ := filepath.Abs("testdata/global.toml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var wants []string
			for _, line := range strings.Split(string(data), "\n") {
				if w, ok := strings.CutPrefix(line, "# want: "); ok {
					wants = append(wants, strings.ReplaceAll(w, "NN", ""))
				}
			}
			if len(wants) == 0 {
				t.Fatal("corpus file has no '# want:' line")
			}
			proj := newProject(t, data)
			_, err = Load(request(proj, global))
			if err == nil {
				t.Fatal("hostile config accepted")
			}
			if !errors.Is(err, ErrViolation) {
				t.Fatalf("error is not a violation: %v", err)
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Join(proj, ProjectFile), filepath.Base(f))
			for _, w := range wants {
				if !strings.Contains(msg, w) {
					t.Errorf("message lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestAllowedCorpus(t *testing.T) {
	files, _ := filepath.Glob("testdata/allowed/*.toml")
	global, _ := filepath.Abs("testdata/global.toml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, _ := os.ReadFile(f)
			proj := newProject(t, data)
			res, err := Load(request(proj, global))
			if err != nil {
				t.Fatalf("allowed config refused: %v", err)
			}
			base, err := Load(request(newProject(t, nil), global))
			if err != nil {
				t.Fatal(err)
			}
			if why := wider(res.Config, base.Config); why != "" {
				t.Errorf("accepted project widened access: %s", why)
			}
		})
	}
}

func TestMergeRules(t *testing.T) {
	parse := func(kind Kind, name, s string) Layer {
		l, err := Parse(kind, name, []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	eff := Merge(
		Defaults(Platform{OS: "linux"}),
		parse(KindGlobal, "g", `egress = ["a.test"]
cpus = 4
[env]
A = "1"
B = "1"`),
		parse(KindProject, "p", `toolchains = ["go"]
[env]
B = "2"`),
		parse(KindTrusted, "t", `egress = ["b.test", "a.test"]
toolchains = ["node", "go"]`),
	)
	c := eff.Config
	if strings.Join(c.Egress, ",") != "a.test,b.test" {
		t.Errorf("egress union = %v", c.Egress)
	}
	if strings.Join(c.Toolchains, ",") != "go,node" {
		t.Errorf("toolchains union = %v", c.Toolchains)
	}
	if c.Env["A"] != "1" || c.Env["B"] != "2" {
		t.Errorf("env per-key = %v", c.Env)
	}
	if *c.CPUs != 4 || *c.Network != "broker" {
		t.Errorf("replace: cpus %d network %s", *c.CPUs, *c.Network)
	}
	if got := strings.Join(eff.Origin["egress"], ","); got != "g,t" {
		t.Errorf("egress origin = %s", got)
	}
	if got := strings.Join(eff.Origin["cpus"], ","); got != "g" {
		t.Errorf("cpus origin = %s", got)
	}
}

func TestUnknownKeys(t *testing.T) {
	_, err := Parse(KindGlobal, "/x/config.toml", []byte("netwrok = \"offline\"\n[[mounts]]\nlocation = \"/a\"\nwriteable = true\n"))
	if !errors.Is(err, ErrViolation) {
		t.Fatalf("unknown keys in a global file: %v", err)
	}
	want := `/x/config.toml:1: netwrok: unknown key
  fix: did you mean "network"? keys are exact (case-sensitive)
/x/config.toml:4: mounts[0].writeable: unknown key
  fix: did you mean "writable"? keys are exact (case-sensitive)`
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
}

func TestStrictProfileFloors(t *testing.T) {
	dir := newProject(t, []byte(`profile = "strict"`))
	g := filepath.Join(t.TempDir(), "g.toml")
	_ = os.WriteFile(g, []byte(`network = "full"`), 0o600)
	res, err := Load(request(dir, g))
	if err != nil {
		t.Fatal(err)
	}
	if *res.Config.Network != "broker" {
		t.Errorf("strict floor: network = %s", *res.Config.Network)
	}
	_ = os.WriteFile(g, []byte(`mount_type = "reverse-sshfs"`), 0o600)
	if _, err := Load(request(dir, g)); err == nil || !strings.Contains(err.Error(), "strict profile refuses reverse-sshfs") {
		t.Errorf("strict + reverse-sshfs: %v", err)
	}
	_ = os.WriteFile(g, []byte(`agent_state = "shared"`), 0o600)
	if _, err := Load(request(dir, g)); err == nil || !strings.Contains(err.Error(), "strict profile refuses shared agent state") {
		t.Errorf("strict + shared agent state: %v", err)
	}
	_ = os.WriteFile(g, []byte(`git_shadow = false`), 0o600)
	if _, err := Load(request(dir, g)); err == nil || !strings.Contains(err.Error(), "strict profile refuses the git shadow opt-out") {
		t.Errorf("strict + git_shadow = false: %v", err)
	}
}

// Agent state is per box unless a trusted layer opts in; a repository
// cannot ask for the shared directory.
func TestAgentStateDefaultIsPerBox(t *testing.T) {
	dir := newProject(t, []byte(`agent_state = "shared"`))
	res, err := Load(request(dir, ""))
	if err == nil {
		t.Fatalf("a repository chose shared agent state: %s", *res.Config.AgentState)
	}
	dir = newProject(t, nil)
	res, err = Load(request(dir, ""))
	if err != nil {
		t.Fatal(err)
	}
	if *res.Config.AgentState != "seeded" {
		t.Errorf("default agent_state = %s", *res.Config.AgentState)
	}
}

// TestGitShadowOptOutIsTrustedOnly: the user's layers may turn the git
// shadow off; a repository may only turn it on.
func TestGitShadowOptOutIsTrustedOnly(t *testing.T) {
	for _, tt := range []struct {
		repo, trusted string
		want          bool
		err           string
	}{
		{repo: "", trusted: "", want: true},
		{repo: "git_shadow = true", trusted: "git_shadow = false", want: false},
		{repo: "", trusted: "git_shadow = false", want: false},
		{repo: "git_shadow = false", err: "a repository may turn the git shadow on, not off"},
	} {
		dir := newProject(t, []byte(tt.repo))
		req := request(dir, "")
		if tt.trusted != "" {
			req.TrustedPath = filepath.Join(t.TempDir(), "trusted.toml")
			_ = os.WriteFile(req.TrustedPath, []byte(tt.trusted), 0o600)
		}
		res, err := Load(req)
		if tt.err != "" {
			if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("repo %q: err = %v, want a violation about %q", tt.repo, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("repo %q trusted %q: %v", tt.repo, tt.trusted, err)
		}
		if *res.Config.GitShadow != tt.want {
			t.Errorf("repo %q trusted %q: git_shadow = %v, want %v", tt.repo, tt.trusted, *res.Config.GitShadow, tt.want)
		}
	}
}

func TestTrustedLayerMayWiden(t *testing.T) {
	dir := newProject(t, []byte(`network = "offline"`))
	tp := filepath.Join(t.TempDir(), "trusted.toml")
	_ = os.WriteFile(tp, []byte("network = \"full\"\negress = [\"example.test\"]\nmounts = [{ location = \"/data\" }]\n"), 0o600)
	req := request(dir, "")
	req.TrustedPath = tp
	res, err := Load(req)
	if err != nil {
		t.Fatal(err)
	}
	if *res.Config.Network != "full" || len(res.Config.Mounts) != 1 {
		t.Errorf("trusted layer not applied: %+v", res.Config)
	}
	if got := res.Origin["network"]; len(got) != 1 || got[0] != tp {
		t.Errorf("origin = %v", got)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]uint64{"4GiB": 4 << 30, "512MiB": 512 << 20, "2G": 2 << 30, "1.5GiB": 3 << 29, "1024": 1024, "8gb": 8 << 30} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "GiB", "-1GiB", "4 XB", "0"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestCheckEgressEntry(t *testing.T) {
	for _, ok := range []string{"example.test", "*.example.test", "example.test:8443", "example.test:*", "EXAMPLE.test.", "bücher.example.test"} {
		if err := CheckEgressEntry(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "*", "*.", "a*.test", "host:0", "host:70000", "host:x", "user@host", "http://host", "a b"} {
		if CheckEgressEntry(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestHostileSpecialFiles: a .corral.toml the box replaced by something
// that is not a small regular file is refused before the parser, as a
// violation naming the file, and nothing of it applies.
func TestHostileSpecialFiles(t *testing.T) {
	global, _ := filepath.Abs("testdata/global.toml")
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		want string
	}{
		{"symlink to /dev/zero", func(t *testing.T, p string) { must(t, os.Symlink("/dev/zero", p)) }, "is a character device, not a regular file"},
		{"fifo", func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o600)) }, "is a FIFO, not a regular file"},
		{"symlink to a fifo", func(t *testing.T, p string) {
			must(t, syscall.Mkfifo(p+".fifo", 0o600))
			must(t, os.Symlink(p+".fifo", p))
		}, "is a FIFO"},
		{"directory", func(t *testing.T, p string) { must(t, os.Mkdir(p, 0o755)) }, "is a directory"},
		{"oversize", func(t *testing.T, p string) {
			must(t, os.WriteFile(p, []byte("# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600))
		}, "more than the 262144 allowed"},
		{"oversize in a comment after a widening key", func(t *testing.T, p string) {
			must(t, os.WriteFile(p, []byte("egress = [\"*.test\"]\n# "+strings.Repeat("x", MaxFileSize)), 0o600))
		}, "more than the 262144 allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proj := newProject(t, nil)
			file := filepath.Join(proj, ProjectFile)
			must(t, os.Remove(file))
			tc.make(t, file)
			res, err := Load(request(proj, global))
			if !errors.Is(err, ErrViolation) || !strings.Contains(err.Error(), file+": is ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load error = %v, want a violation %q", err, tc.want)
			}
			for _, l := range res.Layers {
				if l.Kind == KindProject {
					t.Error("the project layer was applied")
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestEgressRequests: egress in a repository file is a request, pending
// until a host layer allows the entry, pinned to the file's hash; it never
// reaches the effective allow-list by itself.
func TestEgressRequests(t *testing.T) {
	proj := newProject(t, []byte("egress = [\"a.example.test\", \"b.example.test\"]\n"))
	req := request(proj, "")
	req.TrustedPath = filepath.Join(t.TempDir(), "trusted.toml")
	res, err := Load(req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Config.Egress) != 0 {
		t.Errorf("requests reached the allow-list: %v", res.Config.Egress)
	}
	if p := res.Pending(); len(p) != 2 || p[0].Entry != "a.example.test" || p[0].Line != 1 || !strings.HasPrefix(res.ProjectHash, "sha256:") {
		t.Fatalf("pending %+v, hash %q", p, res.ProjectHash)
	}
	must(t, os.WriteFile(req.TrustedPath, []byte("egress = [\"A.example.test.\"]\n"), 0o600))
	res, err = Load(req)
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Pending(); len(p) != 1 || p[0].Entry != "b.example.test" {
		t.Errorf("after the trusted layer allows a: pending %+v", p)
	}
}
