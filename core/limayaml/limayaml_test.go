package limayaml

import (
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/pins"
	"github.com/corral-dev/corral/guest"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite golden files")

func input(t *testing.T, p config.Platform) Input {
	t.Helper()
	eff := config.Merge(config.Defaults(p), func() config.Layer {
		l, err := config.Parse(config.KindGlobal, "g", []byte(`toolchains = ["go"]
packages = ["ripgrep"]
hide = [".env"]
box_dirs = ["node_modules"]
provision = ["scripts/setup.sh"]
mounts = [{ location = "/data/ref", mount_point = "/ref" }]`))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}())
	return Input{
		Platform: p, Settings: eff.Settings(), Box: "web-3f2a1c",
		ProjectDir: "/home/dev/src/web", AgentDir: "/home/dev/.corral/agents/claude",
		SeedDir:    "/home/dev/.corral/seed/web-3f2a1c",
		BrokerHost: "192.168.5.2", BrokerPort: 42123, User: "dev",
	}
}

func TestGolden(t *testing.T) {
	for name, p := range map[string]config.Platform{
		"linux-amd64":  {OS: "linux", Arch: "amd64"},
		"darwin-arm64": {OS: "darwin", Arch: "arm64"},
	} {
		t.Run(name, func(t *testing.T) {
			r, err := Render(input(t, p))
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".yaml")
			if *update {
				_ = os.WriteFile(golden, r.YAML, 0o644)
				_ = os.WriteFile(golden+".sha256", []byte(r.Hash+"\n"), 0o644)
			}
			want, _ := os.ReadFile(golden)
			if string(want) != string(r.YAML) {
				t.Errorf("rendered template differs from %s (run go test -update)", golden)
			}
			wantHash, _ := os.ReadFile(golden + ".sha256")
			if strings.TrimSpace(string(wantHash)) != r.Hash {
				t.Errorf("hash %s, golden %s", r.Hash, wantHash)
			}
			var back map[string]any
			if err := yaml.Unmarshal(r.YAML, &back); err != nil {
				t.Fatalf("not valid YAML: %v", err)
			}
		})
	}
}

func TestStableAndSensitive(t *testing.T) {
	p := config.Platform{OS: "linux", Arch: "amd64"}
	a, _ := Render(input(t, p))
	b, _ := Render(input(t, p))
	if a.Hash != b.Hash {
		t.Fatal("hash not stable")
	}
	in := input(t, p)
	in.BrokerPort++
	c, _ := Render(in)
	if c.Hash == a.Hash {
		t.Error("broker port does not change the hash")
	}
}

func TestGoldenVariantHasNoProject(t *testing.T) {
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	in.Golden = true
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(r.YAML), "/home/dev/src/web") || strings.Contains(string(r.YAML), "/data/ref") {
		t.Error("golden template mentions the project or its mounts")
	}
	in2 := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	in2.Golden, in2.ProjectDir, in2.Box = true, "/elsewhere/api", "api-000000"
	r2, _ := Render(in2)
	if r.Hash != r2.Hash {
		t.Error("golden hash depends on the project")
	}
}

// TestMountsBySourceAndAgentState: the only writable host directory a
// box gets besides the project (and extra mounts) is the shared agent
// state, and only when chosen; the seed is read-only; clone mounts no
// project.
func TestMountsBySourceAndAgentState(t *testing.T) {
	type mount struct {
		point    string
		writable bool
	}
	tests := []struct {
		source config.Source
		state  agentstate.Mode
		want   []mount
	}{
		{"mount", "seeded", []mount{{"/home/dev/src/web", true}, {"/corral/seed", false}, {"/ref", false}}},
		{"mount", "isolated", []mount{{"/home/dev/src/web", true}, {"/ref", false}}},
		{"mount", "shared", []mount{{"/home/dev/src/web", true}, {"/corral/agents/claude", true}, {"/ref", false}}},
		{"clone", "isolated", []mount{{"/corral/seed", false}, {"/ref", false}}},
		{"clone", "seeded", []mount{{"/corral/seed", false}, {"/ref", false}}},
	}
	for _, tt := range tests {
		t.Run(string(tt.source)+"/"+string(tt.state), func(t *testing.T) {
			in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
			in.Settings.Source, in.Settings.AgentState = tt.source, tt.state
			r, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			var tmpl Template
			if err := yaml.Unmarshal(r.YAML, &tmpl); err != nil {
				t.Fatal(err)
			}
			var got []mount
			for _, m := range tmpl.Mounts {
				got = append(got, mount{m.MountPoint, m.Writable})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("mounts %v, want %v", got, tt.want)
			}
			if tmpl.Param["SOURCE"] != string(tt.source) {
				t.Errorf("SOURCE = %q", tmpl.Param["SOURCE"])
			}
		})
	}
}

func TestImageDirectory(t *testing.T) {
	dir := t.TempDir()
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	in.Settings.Image = dir
	if _, err := Render(in); err == nil || !strings.Contains(err.Error(), "lacks rootfs.qcow2") {
		t.Fatalf("incomplete image dir: %v", err)
	}
	for _, f := range []string{ImageRootfs, ImageKernel, ImageInitrd} {
		_ = os.WriteFile(filepath.Join(dir, f), nil, 0o644)
	}
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.YAML), "legacyBIOS: true") || !strings.Contains(string(r.YAML), "vmlinuz") {
		t.Error("direct kernel boot not rendered")
	}
}

// TestGitShadow: the same template choices on both platforms (the guest
// mounts the overlay; on Linux qemu the host also binds .git read-only,
// which is the wrapper's, not the template's): git directories outside the
// project are shared read-only at their own path and listed for the guest;
// the opt-out turns the guest side off and shares nothing extra; a path the
// guest's list cannot carry is refused.
func TestGitShadow(t *testing.T) {
	for _, p := range []config.Platform{{OS: "linux", Arch: "amd64"}, {OS: "darwin", Arch: "arm64"}} {
		t.Run(p.OS, func(t *testing.T) {
			in := input(t, p)
			in.GitShadowDirs = []string{"/home/dev/src/main/.git"}
			r, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			var tmpl Template
			if err := yaml.Unmarshal(r.YAML, &tmpl); err != nil {
				t.Fatal(err)
			}
			if tmpl.Param["GIT_SHADOW"] != "on" || tmpl.Param["GIT_SHADOW_DIRS"] != "/home/dev/src/main/.git" {
				t.Errorf("params %q %q", tmpl.Param["GIT_SHADOW"], tmpl.Param["GIT_SHADOW_DIRS"])
			}
			found := false
			for _, m := range tmpl.Mounts {
				if m.Location == "/home/dev/src/main/.git" {
					found = true
					if m.Writable || m.MountPoint != m.Location {
						t.Errorf("outside git dir mount %+v: want read-only at the same path", m)
					}
				}
			}
			if !found {
				t.Error("outside git dir not shared")
			}
			hasScript := false
			for _, pr := range tmpl.Provision {
				if pr.Mode == "system" && strings.Contains(pr.Script, "\nput /usr/local/lib/corral/git-shadow <<'") {
					hasScript = true
				}
			}
			if !hasScript {
				t.Error("git shadow script not provisioned")
			}

			off := false
			in.Settings.GitShadow = off
			r, err = Render(in)
			if err != nil {
				t.Fatal(err)
			}
			tmpl = Template{}
			_ = yaml.Unmarshal(r.YAML, &tmpl)
			if tmpl.Param["GIT_SHADOW"] != "off" {
				t.Errorf("opt-out: GIT_SHADOW = %q", tmpl.Param["GIT_SHADOW"])
			}
			for _, m := range tmpl.Mounts {
				if m.Location == "/home/dev/src/main/.git" {
					t.Error("opt-out still shares the outside git dir")
				}
			}

			in = input(t, p)
			for _, bad := range []string{"/home/dev/my repo/.git", "/a/it's/.git", "relative/.git"} {
				in.GitShadowDirs = []string{bad}
				if _, err := Render(in); err == nil {
					t.Errorf("%q accepted", bad)
				}
			}
		})
	}
}

func TestGoldenNPMClaude(t *testing.T) {
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	in.Golden = true
	in.NPMDir = "/home/dev/.corral/cache/npm"
	agent, install := "claude", config.ClaudeInstallNPM
	in.Settings.Agent, in.Settings.ClaudeInstall = agent, install
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var back Template
	if err := yaml.Unmarshal(r.YAML, &back); err != nil {
		t.Fatal(err)
	}
	pin, _ := pins.ClaudeCode("amd64")
	if back.Param["AGENT_NPM"] != pin.File()+":"+pin.SHA512Hex() || back.Param["AGENT_STATE_DIR"] != ".claude" {
		t.Errorf("params %v", back.Param)
	}
	if !hasData(back, guest.AgentInstallPath, guest.AgentInstall("claude")) {
		t.Errorf("no install step at %s", guest.AgentInstallPath)
	}
	if len(back.Mounts) != 1 || back.Mounts[0].Location != in.NPMDir || back.Mounts[0].MountPoint != NPMMount || back.Mounts[0].Writable {
		t.Errorf("mounts %+v, want the npm cache read-only at %s", back.Mounts, NPMMount)
	}
	// The default (official) installs nothing from the host.
	official := config.ClaudeInstallOfficial
	in.Settings.ClaudeInstall = official
	r, _ = Render(in)
	back = Template{}
	if err := yaml.Unmarshal(r.YAML, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Mounts) != 0 || back.Param["AGENT_NPM"] != "" {
		t.Errorf("official install renders the npm mount or params: %+v %v", back.Mounts, back.Param)
	}
}

func hasData(t Template, path, content string) bool {
	for _, p := range t.Provision {
		if p.Mode == "data" && p.Path == path && p.Content == content {
			return true
		}
	}
	return false
}

// TestAgentsAsData: every built-in agent with an install step renders it
// and its pinned tarballs in the golden template, in the order the step
// takes them; a box cloned from the golden gets the step (30-agent.sh
// skips it when the golden ran it) but neither the npm share nor the pins.
func TestAgentsAsData(t *testing.T) {
	for _, tc := range []struct {
		agent, state string
		npm          []string
	}{
		{"codex", ".codex", []string{"@openai/codex@*-linux-{arch}"}},
		{"gemini", ".gemini", []string{"node-linux-{arch}", "@google/gemini-cli"}},
		{"shell", "", nil},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
			in.Golden = true
			in.NPMDir = "/home/dev/.corral/cache/npm"
			name := tc.agent
			in.Settings.Agent = name
			back := renderBack(t, in)
			var want []string
			for _, pat := range tc.npm {
				p, err := pins.Resolve(pat, "amd64")
				if err != nil {
					t.Fatal(err)
				}
				want = append(want, p.File()+":"+p.SHA512Hex())
			}
			if got := back.Param["AGENT_NPM"]; got != strings.Join(want, " ") {
				t.Errorf("AGENT_NPM = %q, want %q", got, strings.Join(want, " "))
			}
			if back.Param["AGENT"] != tc.agent || back.Param["AGENT_STATE_DIR"] != tc.state {
				t.Errorf("params %v", back.Param)
			}
			if install := guest.AgentInstall(tc.agent); (install != "") != hasData(back, guest.AgentInstallPath, install) {
				t.Errorf("install step rendered = %v, want %v", !(install != ""), install != "")
			}
			in.Golden = false
			box := renderBack(t, in)
			for _, m := range box.Mounts {
				if m.MountPoint == NPMMount {
					t.Errorf("a golden-cloned box shares the npm cache")
				}
			}
			if box.Param["AGENT_NPM"] != "" {
				t.Errorf("a golden-cloned box gets AGENT_NPM %q", box.Param["AGENT_NPM"])
			}
		})
	}
}

// TestConfigAgentInstall: an [agents.NAME] definition's install step is
// rendered as written (a data file, never templated into a script), and
// an unknown agent refuses to render.
func TestConfigAgentInstall(t *testing.T) {
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	in.Golden = true
	name := "aider"
	in.Settings.Agent = name
	in.Settings.Agents = map[string]agent.Def{"aider": {Command: []string{"aider"}, Install: "pip install 'aider-chat==0.86.0'\n", StateDir: ".aider"}}
	back := renderBack(t, in)
	if !hasData(back, guest.AgentInstallPath, in.Settings.Agents["aider"].Install) || back.Param["AGENT_STATE_DIR"] != ".aider" || back.Param["AGENT_NPM"] != "" {
		t.Errorf("params %v", back.Param)
	}
	in.Settings.Agents = nil
	if _, err := Render(in); err == nil {
		t.Error("an undefined agent rendered")
	}
}

func renderBack(t *testing.T, in Input) Template {
	t.Helper()
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	var back Template
	if err := yaml.Unmarshal(r.YAML, &back); err != nil {
		t.Fatal(err)
	}
	return back
}

// TestPortForwardsOrder: the ports key renders one allow rule per port,
// bound on the host's 127.0.0.1 only, ahead of the ignore rules (Lima
// takes the first rule that matches a listener); a golden image forwards
// nothing; and the ports stay out of the template hash (they are applied
// at every start, no rebuild).
func TestPortForwardsOrder(t *testing.T) {
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	plain, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Settings.PortEntries = []string{"3000", "8080:80"}
	back := renderBack(t, in)
	f := back.PortForwards
	if len(f) != 4 {
		t.Fatalf("port forwards %+v", f)
	}
	for i, want := range []config.Port{{Host: 3000, Guest: 3000}, {Host: 8080, Guest: 80}} {
		r := f[i]
		if r.Ignore || r.HostIP != "127.0.0.1" || r.HostPort != want.Host || r.GuestPort != want.Guest || r.Proto != "tcp" ||
			r.GuestIP != "0.0.0.0" || r.GuestIPMustBeZero == nil || *r.GuestIPMustBeZero {
			t.Errorf("rule %d = %+v, want an allow rule %v on 127.0.0.1", i, r, want)
		}
	}
	for _, r := range f[2:] {
		if !r.Ignore || r.GuestPort != 0 || r.HostPort != 0 {
			t.Errorf("after the allow rules: %+v, want the ignore rules", r)
		}
	}
	withPorts, _ := Render(in)
	if withPorts.Hash != plain.Hash {
		t.Error("ports changed the template hash: adding one would ask for a rebuild")
	}
	if !strings.Contains(string(withPorts.YAML), "hostIP: 127.0.0.1\n    hostPort: 3000") {
		t.Errorf("rendered:\n%s", withPorts.YAML)
	}
	in.Golden = true
	if g := renderBack(t, in); len(g.PortForwards) != 2 || !g.PortForwards[0].Ignore {
		t.Errorf("golden forwards %+v", g.PortForwards)
	}
}

func TestSetPortForwards(t *testing.T) {
	in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
	r, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	rules := PortForwards([]config.Port{{Host: 5173, Guest: 5173}})
	out, err := SetPortForwards(r.YAML, rules)
	if err != nil {
		t.Fatal(err)
	}
	var before, after Template
	if err := yaml.Unmarshal(r.YAML, &before); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &after); err != nil {
		t.Fatal(err)
	}
	if len(after.PortForwards) != 3 || after.PortForwards[0].HostPort != 5173 || after.PortForwards[0].HostIP != "127.0.0.1" {
		t.Errorf("forwards %+v", after.PortForwards)
	}
	after.PortForwards = before.PortForwards
	a, _ := yaml.Marshal(before)
	b, _ := yaml.Marshal(after)
	if string(a) != string(b) {
		t.Error("SetPortForwards changed more than portForwards")
	}
	// Back to none: only the ignore rules.
	out, err = SetPortForwards(out, PortForwards(nil))
	if err != nil || strings.Contains(string(out), "hostPort") {
		t.Errorf("cleared: %v\n%s", err, out)
	}
	if _, err := SetPortForwards([]byte("- a\n- b\n"), rules); err == nil {
		t.Error("a YAML list was accepted as an instance template")
	}
}

// The default images follow Lima's pattern for every arch: a dated serial
// with a digest first, then the undated release of the same series without
// one, so an expired serial still leaves an image to download.
func TestDefaultImagesHaveAFallback(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		ims := DefaultImages(goarch)
		if len(ims) != 2 {
			t.Fatalf("%s: %d images, want a pinned one and a fallback", goarch, len(ims))
		}
		pinned, fallback := ims[0], ims[1]
		if !strings.HasPrefix(pinned.Digest, "sha256:") || !strings.Contains(pinned.Location, "/release-") {
			t.Errorf("%s: first image %+v is not a dated serial with a digest", goarch, pinned)
		}
		if fallback.Digest != "" || !strings.Contains(fallback.Location, "/release/") {
			t.Errorf("%s: second image %+v is not the undated release", goarch, fallback)
		}
		if path.Base(pinned.Location) != path.Base(fallback.Location) {
			t.Errorf("%s: pinned %s and fallback %s are different files", goarch, pinned.Location, fallback.Location)
		}
		for _, im := range ims {
			if im.Arch != limaArch(goarch) {
				t.Errorf("%s: image %s has arch %s", goarch, im.Location, im.Arch)
			}
		}
	}
}

func TestImageURLs(t *testing.T) {
	url := "https://127.0.0.1/x.img"
	dir := t.TempDir()
	for _, tc := range []struct {
		image *string
		want  int
	}{{nil, 2}, {&url, 1}, {&dir, 0}} {
		got := ImageURLs(config.Effective{Config: config.Config{Image: tc.image}}.Settings(), "arm64")
		if len(got) != tc.want {
			t.Errorf("image %v: %d URLs, want %d", tc.image, len(got), tc.want)
		}
	}
}

// TestProvisionNamesMatchEntries: Lima numbers the provision entries
// (provision.<mode>/<index>), so a failure found in the console log is
// named by index: one name per entry, the guest scripts under their file
// names (the installer once wrote nine programs' names for its one entry).
func TestProvisionNamesMatchEntries(t *testing.T) {
	for _, golden := range []bool{false, true} {
		in := input(t, config.Platform{OS: "linux", Arch: "amd64"})
		in.Golden = golden
		r, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		var tmpl Template
		if err := yaml.Unmarshal(r.YAML, &tmpl); err != nil {
			t.Fatal(err)
		}
		if len(r.Provision) != len(tmpl.Provision) {
			t.Fatalf("golden=%v: %d names for %d entries: %q", golden, len(r.Provision), len(tmpl.Provision), r.Provision)
		}
		for i, p := range tmpl.Provision {
			if strings.HasPrefix(r.Provision[i], "guest/provision/") {
				name := strings.TrimPrefix(r.Provision[i], "guest/provision/")
				if !strings.Contains(p.Script, "/run/corral/provision/"+name+"\"") {
					t.Errorf("entry %d named %s does not record itself as %s", i, r.Provision[i], name)
				}
			}
		}
	}
}
