package config

import "github.com/corral-dev/corral/core/agentstate"

// The values of the enumerated keys. Each key has a named type and a
// constant per value; the schema's allowed values (and, for ordered keys,
// their ranks, loosest first) are derived from these lists, so a value is
// written once. Network is in network.go.

// VMType is the value of vm_type: the VM driver Lima runs the box with.
type VMType string

// The VM drivers corral accepts.
const (
	VMTypeVZ   VMType = "vz" // Apple's Virtualization.framework (macOS only)
	VMTypeQEMU VMType = "qemu"
)

// MountType is the value of mount_type: how the project is shared.
type MountType string

// The mount types corral accepts.
const (
	MountVirtiofs     MountType = "virtiofs"
	Mount9p           MountType = "9p"
	MountReverseSSHFS MountType = "reverse-sshfs"
)

// Source is the value of source: how the box gets the project.
type Source string

// The sources, loosest first (SourceOrder).
const (
	SourceMount Source = "mount" // the project directory is shared
	SourceClone Source = "clone" // the box clones the repository onto its own disk
)

// Profile is the value of profile.
type Profile string

// The profiles, loosest first (ProfileOrder).
const (
	ProfileDefault Profile = "default"
	ProfileStrict  Profile = "strict"
)

// AgentCredentials is the value of agent_credentials: how the agent's own
// key reaches the box.
type AgentCredentials string

// The agent credential modes, loosest first (AgentCredentialsOrder).
const (
	AgentCredsForwarded AgentCredentials = "forwarded"
	AgentCredsBrokered  AgentCredentials = "brokered"
)

// ClaudeInstall is the value of claude_install.
type ClaudeInstall string

// How a golden image gets Claude Code.
const (
	ClaudeInstallOfficial ClaudeInstall = "official"
	ClaudeInstallNPM      ClaudeInstall = "npm"
)

// Snapshots is the value of snapshots.
type Snapshots string

// The snapshot modes.
const (
	SnapshotsAuto Snapshots = "auto" // a snapshot before every start
	SnapshotsOff  Snapshots = "off"  // only on request
)

// IdleAction is the value of idle_action: what the idle rule does to an
// idle box.
type IdleAction string

// The idle actions.
const (
	IdleActionStop IdleAction = "stop"
	IdleActionSave IdleAction = "save" // suspend to disk (qemu only)
)

// CredentialHeader is the header value of a [credentials.NAME] table.
type CredentialHeader string

// How a brokered credential is sent upstream.
const (
	HeaderXAPIKey       CredentialHeader = "x-api-key"
	HeaderAuthorization CredentialHeader = "authorization" // Bearer
	HeaderBasic         CredentialHeader = "basic"         // Basic x-access-token:SECRET
	HeaderXGoogAPIKey   CredentialHeader = "x-goog-api-key"
)

// The allowed values of each enumerated key; those named ...Order are
// ranked, loosest first (the trust policy compares by rank).
var (
	VMTypes               = names(VMTypeVZ, VMTypeQEMU)
	MountTypes            = names(MountVirtiofs, Mount9p, MountReverseSSHFS)
	NetworkOrder          = names(NetworkFull, NetworkLearn, NetworkBroker, NetworkOffline)
	AgentStateOrder       = names(agentstate.Shared, agentstate.Seeded, agentstate.Isolated)
	ProfileOrder          = names(ProfileDefault, ProfileStrict)
	SourceOrder           = names(SourceMount, SourceClone)
	AgentCredentialsOrder = names(AgentCredsForwarded, AgentCredsBrokered)
	ClaudeInstalls        = names(ClaudeInstallOfficial, ClaudeInstallNPM)
	SnapshotModes         = names(SnapshotsAuto, SnapshotsOff)
	IdleActions           = names(IdleActionStop, IdleActionSave)
	CredentialHeaders     = names(HeaderXAPIKey, HeaderAuthorization, HeaderBasic, HeaderXGoogAPIKey)
)

// names lists typed values as the strings the schema and messages use.
func names[T ~string](vs ...T) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

// val is the value of an optional key, "" when unset.
func val[T ~string](p *T) T {
	if p == nil {
		return ""
	}
	return *p
}

// str is an optional key's value as a string, nil when unset.
func str[T ~string](p *T) *string {
	if p == nil {
		return nil
	}
	s := string(*p)
	return &s
}
