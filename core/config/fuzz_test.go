package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// rank is v's rank in order, -1 when unset.
func rank[T ~string](order []string, v *T) int {
	if v == nil {
		return -1
	}
	return slices.Index(order, string(*v))
}

// strOf is an optional value as a string, "" when unset.
func strOf[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// wider reports how eff grants more host access than base, or "".
func wider(eff, base Config) string {
	switch {
	case rank(NetworkOrder, eff.Network) < rank(NetworkOrder, base.Network):
		return "network loosened"
	case rank(AgentStateOrder, eff.AgentState) < rank(AgentStateOrder, base.AgentState):
		return "agent_state loosened"
	case rank(ProfileOrder, eff.Profile) < rank(ProfileOrder, base.Profile):
		return "profile loosened"
	case rank(SourceOrder, eff.Source) < rank(SourceOrder, base.Source):
		return "source loosened"
	case rank(AgentCredentialsOrder, eff.AgentCreds) < rank(AgentCredentialsOrder, base.AgentCreds):
		return "agent_credentials loosened"
	case strOf(eff.ClaudeInstall) != strOf(base.ClaudeInstall):
		return "claude_install changed"
	case base.ReadonlyProject != nil && *base.ReadonlyProject && !*eff.ReadonlyProject:
		return "project made writable"
	case base.GitShadow != nil && *base.GitShadow && (eff.GitShadow == nil || !*eff.GitShadow):
		return "git shadow turned off"
	case eff.Sudo != nil && *eff.Sudo && (base.Sudo == nil || !*base.Sudo):
		return "sudo granted"
	case strOf(eff.Image) != strOf(base.Image), strOf(eff.VMType) != strOf(base.VMType),
		strOf(eff.MountType) != strOf(base.MountType), strOf(eff.Agent) != strOf(base.Agent):
		return "host-only scalar changed"
	case len(eff.Egress) > len(base.Egress), len(eff.Mounts) > len(base.Mounts),
		len(eff.ForwardEnv) > len(base.ForwardEnv), len(eff.GitTokens) > len(base.GitTokens),
		len(eff.EnvFromHost) > len(base.EnvFromHost), len(eff.KeychainEnv) > len(base.KeychainEnv),
		len(eff.Credentials) > len(base.Credentials):
		return "host-only list grew"
	}
	if eff.Memory != nil {
		if n, err := ParseSize(*eff.Memory); err == nil && n > testHostMem/2 {
			return "memory above cap"
		}
	}
	if eff.CPUs != nil && *eff.CPUs > 8 {
		return "cpus above cap"
	}
	for n := range eff.Env {
		if _, ok := base.Env[n]; !ok && secretish(n, &base) != "" {
			return fmt.Sprintf("secret-looking env %s added", n)
		}
	}
	return ""
}

func FuzzProjectNeverWidens(f *testing.F) {
	for _, dir := range []string{"testdata/hostile", "testdata/allowed"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.toml"))
		for _, p := range files {
			b, _ := os.ReadFile(p)
			f.Add(b)
		}
	}
	global, _ := filepath.Abs("testdata/global.toml")
	f.Fuzz(func(t *testing.T, data []byte) {
		proj := newProject(t, data)
		res, err := Load(request(proj, global))
		if err != nil {
			return // refused: nothing applied
		}
		base, err := Load(request(newProject(t, nil), global))
		if err != nil {
			t.Fatal(err)
		}
		if why := wider(res.Config, base.Config); why != "" {
			t.Fatalf("project file widened the effective config: %s\n%s", why, data)
		}
	})
}
