package config

import (
	"strings"
	"time"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
)

// Settings is the effective configuration as the rest of corral reads it:
// every schema key's value, typed, with its default applied, and no
// pointers. Config keeps its pointers because a layer must say "unset";
// once the layers are merged nothing is unset any more, so consumers read
// Settings (Effective.Settings makes it, the one place a default is
// applied) and never dereference a Config field themselves.
//
// Each field has the name of its Config field and a key tag naming its
// schema key (TestSettingsCoverSchema holds them to Schema). The slices
// and maps are the Effective's own: read them, never write them.
type Settings struct {
	CPUs            int                   `key:"cpus"`
	Memory          string                `key:"memory"`
	Disk            string                `key:"disk"`
	Image           string                `key:"image"` // "": the platform's default image (core/limayaml)
	VMType          VMType                `key:"vm_type"`
	MountType       MountType             `key:"mount_type"`
	Toolchains      []string              `key:"toolchains"`
	Packages        []string              `key:"packages"`
	Hide            []string              `key:"hide"`
	BoxDirs         []string              `key:"box_dirs"`
	ReadonlyProject bool                  `key:"readonly_project"`
	GitShadow       bool                  `key:"git_shadow"`
	Source          Source                `key:"source"`
	Network         Network               `key:"network"` // as set: NetworkMode is the mode the box runs in
	Egress          []string              `key:"egress"`
	EgressGroups    []string              `key:"egress_groups"`
	LearnFor        time.Duration         `key:"learn_for"` // never 0: DefaultLearnFor unless set
	PortEntries     []string              `key:"ports"`
	HostPorts       []int                 `key:"host_ports"`
	LowHostPorts    bool                  `key:"low_host_ports"`
	HoldDenied      time.Duration         `key:"hold_denied"`    // 0: never hold
	UpstreamProxy   UpstreamProxy         `key:"upstream_proxy"` // URL "": none
	Agent           string                `key:"agent"`
	Agents          map[string]agent.Def  `key:"agents"`
	AgentState      agentstate.Mode       `key:"agent_state"`
	Profile         Profile               `key:"profile"`
	Mounts          []Mount               `key:"mounts"`
	ForwardEnv      []string              `key:"forward_env"`
	Env             map[string]string     `key:"env"`
	EnvFromHost     map[string]string     `key:"env_from_host"`
	KeychainEnv     map[string]SecretRef  `key:"keychain_env"`
	GitTokens       []string              `key:"git_tokens"`
	Credentials     map[string]Credential `key:"credentials"`
	AgentCreds      AgentCredentials      `key:"agent_credentials"`
	ClaudeInstall   ClaudeInstall         `key:"claude_install"`
	Provision       []string              `key:"provision"`
	Sudo            bool                  `key:"sudo"`
	Golden          bool                  `key:"golden"`
	IdleStop        time.Duration         `key:"idle_stop"` // 0: never
	StopOnExit      bool                  `key:"stop_on_exit"`
	IdleAction      IdleAction            `key:"idle_action"`
	SaveFreeBelow   uint64                `key:"save_when_free_below"` // bytes; 0: off
	Snapshots       Snapshots             `key:"snapshots"`
	SnapshotsKeep   int                   `key:"snapshots_keep"`
	Terminal        string                `key:"terminal"` // "": the platform's default terminal (app/terminal finds it)
	ProjectRoots    []string              `key:"project_roots"`
	Host            string                `key:"host"` // "": this machine
}

// Settings returns the effective values with every unset key's default
// applied: the built-in layer's value (Defaults, for e's platform) where
// it has one, else the key's documented default. Load's result sets every
// key the built-in layer does; the defaults here matter for an Effective
// merged without it (and are the same values).
func (e Effective) Settings() Settings {
	c, d := e.Config, Defaults(e.Platform).Config
	learnFor := or(c.LearnFor, Duration{}).Duration
	if learnFor <= 0 { // "0" is no learning window: the default one
		learnFor = DefaultLearnFor
	}
	return Settings{
		CPUs:            or(c.CPUs, *d.CPUs),
		Memory:          or(c.Memory, *d.Memory),
		Disk:            or(c.Disk, *d.Disk),
		Image:           or(c.Image, ""),
		VMType:          or(c.VMType, *d.VMType),
		MountType:       or(c.MountType, *d.MountType),
		Toolchains:      c.Toolchains,
		Packages:        c.Packages,
		Hide:            c.Hide,
		BoxDirs:         c.BoxDirs,
		ReadonlyProject: or(c.ReadonlyProject, *d.ReadonlyProject),
		GitShadow:       or(c.GitShadow, *d.GitShadow),
		Source:          or(c.Source, *d.Source),
		Network:         or(c.Network, *d.Network),
		Egress:          c.Egress,
		EgressGroups:    c.EgressGroups,
		LearnFor:        learnFor,
		PortEntries:     c.PortEntries,
		HostPorts:       c.HostPorts,
		LowHostPorts:    or(c.LowHostPorts, false),
		HoldDenied:      or(c.HoldDenied, *d.HoldDenied).Duration,
		UpstreamProxy:   or(c.UpstreamProxy, UpstreamProxy{}),
		Agent:           or(c.Agent, *d.Agent),
		Agents:          c.Agents,
		AgentState:      or(c.AgentState, *d.AgentState),
		Profile:         or(c.Profile, *d.Profile),
		Mounts:          c.Mounts,
		ForwardEnv:      c.ForwardEnv,
		Env:             c.Env,
		EnvFromHost:     c.EnvFromHost,
		KeychainEnv:     c.KeychainEnv,
		GitTokens:       c.GitTokens,
		Credentials:     c.Credentials,
		AgentCreds:      or(c.AgentCreds, *d.AgentCreds),
		ClaudeInstall:   or(c.ClaudeInstall, *d.ClaudeInstall),
		Provision:       c.Provision,
		Sudo:            or(c.Sudo, false),
		Golden:          or(c.Golden, *d.Golden),
		IdleStop:        or(c.IdleStop, *d.IdleStop).Duration,
		StopOnExit:      or(c.StopOnExit, *d.StopOnExit),
		IdleAction:      or(c.IdleAction, *d.IdleAction),
		SaveFreeBelow:   saveFreeBelow(c.SaveFreeBelow),
		Snapshots:       or(c.Snapshots, *d.Snapshots),
		SnapshotsKeep:   or(c.SnapshotsKeep, *d.SnapshotsKeep),
		Terminal:        or(c.Terminal, ""),
		ProjectRoots:    c.ProjectRoots,
		Host:            or(c.Host, ""),
	}
}

// or is an optional key's value, def when unset.
func or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// NetworkMode returns the network mode the box runs in. Learning boxes run
// in broker mode: NetworkLearn is returned as NetworkBroker (Learns says
// whether the config asks to learn).
func (s Settings) NetworkMode() Network {
	if s.Network == NetworkLearn {
		return NetworkBroker
	}
	return s.Network
}

// Learns reports whether the config sets network = "learn".
func (s Settings) Learns() bool { return s.Network == NetworkLearn }

// Ports returns the forwarded ports of a validated config (entries that do
// not parse are left out; Load refuses them).
func (s Settings) Ports() []Port { return parsePorts(s.PortEntries) }

// BridgedPorts returns the host_ports of a validated config that the box
// may reach, sorted, without duplicates (layers merge by union); nil
// outside broker mode, which has no broker address to reach them at.
func (s Settings) BridgedPorts() []int { return bridgedPorts(s.NetworkMode(), s.HostPorts) }

// GrantContext is the grant context of a loaded config.
func (s Settings) GrantContext() GrantContext { return GrantContext{LowHostPorts: s.LowHostPorts} }

// saveFreeBelow is save_when_free_below in bytes: 0 when unset, "0" or
// not a size (validation reports that one).
func saveFreeBelow(v *string) uint64 {
	if v == nil || strings.TrimSpace(*v) == "0" {
		return 0
	}
	n, err := ParseSize(*v)
	if err != nil {
		return 0
	}
	return n
}
