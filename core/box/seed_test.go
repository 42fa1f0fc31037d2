package box

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/guest"
)

// reresolve rewrites the global config and resolves the project again.
func reresolve(t *testing.T, s *Service, r boxmeta.Resolved, global string) boxmeta.Resolved {
	t.Helper()
	must(t, os.WriteFile(s.Layout.GlobalConfig(), []byte("network = \"full\"\ngolden = false\n"+global), 0o600))
	r2, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: r.Project.Dir, Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	must(t, err)
	return r2
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// seenAtStart lists the files of the box's seed directory when its
// instance starts (what the first boot copies).
func seenAtStart(t *testing.T, f *fakeLima, s *Service) map[string]string {
	got := map[string]string{}
	f.onStart = func(name string) {
		dir := s.Layout.SeedDir(name)
		_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() {
				b, _ := os.ReadFile(p)
				rel, _ := filepath.Rel(dir, p)
				got[rel] = string(b)
			}
			return nil
		})
	}
	return got
}

func TestSeededAgentState(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	got := seenAtStart(t, f, s)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	// The template holds the first-run settings; the box's copy also
	// trusts its project folder.
	tmpl := s.Layout.AgentTemplate("claude")
	if _, err := os.Stat(filepath.Join(tmpl, "settings.json")); err != nil {
		t.Fatalf("template: %v", err)
	}
	var global map[string]any
	must(t, json.Unmarshal([]byte(got["agent/.claude.json"]), &global))
	if global["hasCompletedOnboarding"] != true {
		t.Errorf(".claude.json %v", global)
	}
	proj, _ := global["projects"].(map[string]any)[r.Project.Dir].(map[string]any)
	if proj["hasTrustDialogAccepted"] != true {
		t.Errorf("project not trusted: %v", global)
	}
	if !strings.Contains(got["agent/settings.json"], "skipDangerousModePermissionPrompt") {
		t.Errorf("settings %q", got["agent/settings.json"])
	}
	// The template itself names no project; the seed is emptied after the
	// first boot, the share stays.
	if b, _ := os.ReadFile(filepath.Join(tmpl, ".claude.json")); bytes.Contains(b, []byte(r.Project.Dir)) {
		t.Error("the box's project was written into the template")
	}
	ents, err := os.ReadDir(s.Layout.SeedDir(r.Project.Box))
	if err != nil || len(ents) != 0 {
		t.Errorf("seed after first start: %v %v", ents, err)
	}
	m, _ := boxmeta.Read(s.Layout, r.Project.Box)
	if m.AgentState != "seeded" || m.Source != "mount" {
		t.Errorf("meta %+v", m)
	}
	if _, err := os.Stat(s.Layout.AgentDir("claude")); err == nil {
		t.Error("the shared agent directory was created for a seeded box")
	}
}

// TestSeedSkipsLinks: a link in the template (pointing at a host secret)
// is not followed into the box's copy, and a link a previous box left in
// its seed directory is removed, not written through.
func TestSeedSkipsLinks(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	r = reresolve(t, s, r, "agent = \"shell\"\n")
	secret := filepath.Join(t.TempDir(), "secret")
	must(t, os.WriteFile(secret, []byte("host secret"), 0o600))
	tmpl := s.Layout.AgentTemplate("shell")
	must(t, os.MkdirAll(tmpl, 0o700))
	must(t, os.WriteFile(filepath.Join(tmpl, "rc"), []byte("ok"), 0o600))
	must(t, os.Symlink(secret, filepath.Join(tmpl, "link")))
	// An earlier box's seed directory with a planted link.
	old := s.Layout.SeedDir(r.Project.Box)
	must(t, os.MkdirAll(filepath.Dir(old), 0o700))
	victim := t.TempDir()
	must(t, os.Symlink(victim, old))

	got := seenAtStart(t, f, s)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got["agent/rc"] != "ok" {
		t.Errorf("seed = %v", got)
	}
	if ents, _ := os.ReadDir(victim); len(ents) != 0 {
		t.Errorf("wrote through a planted link: %v", ents)
	}
}

func TestSharedAgentStateWarns(t *testing.T) {
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	r = reresolve(t, s, r, "agent_state = \"shared\"\n")
	var progress bytes.Buffer
	s.Progress = &progress
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "can plant a hook") {
		t.Errorf("no risk stated: %q", progress.String())
	}
	if _, err := os.Stat(s.Layout.SeedDir(r.Project.Box)); err == nil {
		t.Error("a seed for a shared-state box")
	}
	if _, err := os.Stat(s.Layout.AgentTemplate("claude")); err == nil {
		t.Error("template written for a shared-state box")
	}
	m, _ := boxmeta.Read(s.Layout, r.Project.Box)
	if c := agentStateCheck(m, boxmeta.Resolved{}); c.OK || !strings.Contains(c.Detail, "plant") {
		t.Errorf("doctor: %+v", c)
	}
}

func TestCloneSourceBundlesTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	f := &fakeLima{insts: map[string]string{}, fail: map[string]string{}}
	s, r := newTestService(t, f)
	r = reresolve(t, s, r, "source = \"clone\"\nagent_state = \"isolated\"\n")
	if _, err := s.Up(context.Background(), r, UpOptions{}); err == nil || !strings.Contains(err.Error(), "needs a git repository") {
		t.Fatalf("clone of a non-repository: %v", err)
	}
	_ = s.Remove(context.Background(), r.Project.Box, true)
	for _, args := range [][]string{{"init", "-q"}, {"commit", "-q", "--allow-empty", "-m", "c"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = r.Project.Dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	got := seenAtStart(t, f, s)
	if _, err := s.Up(context.Background(), r, UpOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got[guest.SeedBundle], "# v2 git bundle\n") {
		t.Errorf("seed %v", got)
	}
	if _, ok := got["agent/settings.json"]; ok {
		t.Error("isolated state was seeded")
	}
}

func TestAgentStateCheck(t *testing.T) {
	for mode, ok := range map[agentstate.Mode]bool{"seeded": true, "isolated": true, "shared": false, "": false} {
		if c := agentStateCheck(boxmeta.Meta{Name: "b", AgentState: mode}, boxmeta.Resolved{}); c.OK != ok {
			t.Errorf("%q: %+v", mode, c)
		}
	}
}
