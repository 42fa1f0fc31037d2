package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
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
			if len(res.Warnings) != 0 {
				t.Errorf("warnings: %v", res.Warnings)
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
		l, _, err := Parse(kind, name, []byte(s))
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

func TestUnknownKeysWarn(t *testing.T) {
	_, warns, err := Parse(KindGlobal, "/x/config.toml", []byte("netwrok = \"offline\"\n[[mounts]]\nlocation = \"/a\"\nwriteable = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range warns {
		got = append(got, w.File+":"+w.Key)
	}
	want := "/x/config.toml:netwrok,/x/config.toml:mounts.writeable"
	if strings.Join(got, ",") != want {
		t.Errorf("warnings = %v, want %s", got, want)
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
