package config

import (
	"time"

	"github.com/corral-dev/corral/core/agentstate"
)

// Platform is the OS and CPU architecture a box is rendered for. It is
// explicit so that tests render the macOS variant on Linux.
type Platform struct {
	OS   string // "darwin" or "linux"
	Arch string // "arm64" or "amd64"
}

func ptr[T any](v T) *T { return &v }

// Defaults is the built-in layer.
func Defaults(p Platform) Layer {
	vm, mt := VMTypeQEMU, Mount9p
	if p.OS == "darwin" {
		vm, mt = VMTypeVZ, MountVirtiofs
	}
	c := Config{
		CPUs:            ptr(2),
		Memory:          ptr("4GiB"),
		Disk:            ptr("50GiB"),
		VMType:          ptr(vm),
		MountType:       ptr(mt),
		ReadonlyProject: ptr(false),
		GitShadow:       ptr(true),
		Source:          ptr(SourceMount),
		Network:         ptr(NetworkBroker),
		Agent:           ptr("claude"),
		AgentState:      ptr(agentstate.Seeded),
		AgentCreds:      ptr(AgentCredsBrokered),
		ClaudeInstall:   ptr(ClaudeInstallOfficial),
		Profile:         ptr(ProfileDefault),
		Golden:          ptr(true),
		IdleStop:        &Duration{30 * time.Minute},
		HoldDenied:      &Duration{},
		StopOnExit:      ptr(false),
		IdleAction:      ptr(IdleActionStop),
		SaveFreeBelow:   ptr("0"),
		Snapshots:       ptr(SnapshotsOff),
		SnapshotsKeep:   ptr(3),
	}
	return Layer{Kind: KindDefault, Path: "default", Config: c, Set: setKeys(&c)}
}
