// Package guest embeds the scripts that run inside a box: Lima provision
// scripts (run as root at every boot, in file-name order), corral-launch,
// the guest end of every session, corral-git-credential, git's
// credential helper, and corral-git-shadow, the overlay that keeps the
// box's git writes out of the host's .git (see core/gitshadow). Parameters reach them as Lima params (PARAM_*
// environment variables), never by templating shell code.
package guest

import (
	"embed"
	"io/fs"
	"sort"
)

//go:embed provision/*.sh
var provision embed.FS

//go:embed agents/*.sh
var agents embed.FS

//go:embed corral-launch.sh
var launch string

//go:embed corral-git-credential.sh
var gitCredential string

//go:embed corral-repo.sh
var repo string

//go:embed corral-request.sh
var request string

//go:embed corral-git.sh
var gitWrapper string

//go:embed corral-git-shadow.sh
var gitShadow string

//go:embed corral-unit.sh
var unit string

//go:embed apply-network.sh
var applyNetwork string

//go:embed apply-project.sh
var applyProject string

//go:embed corral-suspend.sh
var suspend string

//go:embed toolchain-registries.sh
var toolchainRegistries string

// Script is one provision script.
type Script struct {
	Name    string // file name, e.g. "40-network.sh"
	Content string
}

// Provision returns the provision scripts in the order they must run.
func Provision() []Script {
	ents, err := fs.ReadDir(provision, "provision")
	if err != nil {
		return nil // cannot happen: the directory is embedded
	}
	var out []Script
	for _, e := range ents {
		b, _ := provision.ReadFile("provision/" + e.Name())
		out = append(out, Script{Name: e.Name(), Content: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AgentInstall returns the install step of a built-in agent
// (agents/<name>.sh), or "" when it has none.
func AgentInstall(name string) string {
	b, err := agents.ReadFile("agents/" + name + ".sh")
	if err != nil {
		return ""
	}
	return string(b)
}

// AgentInstallPath is where a golden build's agent install step is
// written; provision/30-agent.sh runs it.
const AgentInstallPath = "/usr/local/lib/corral/agent-install"

// Launch returns the corral-launch script.
func Launch() string { return launch }

// LaunchPath is where corral-launch is installed in the guest.
const LaunchPath = "/usr/local/bin/corral-launch"

// GitCredential returns the corral-git-credential script, git's credential
// helper in the box (configured by provision/35-git.sh).
func GitCredential() string { return gitCredential }

// GitCredentialPath is where corral-git-credential is installed in the
// guest; provision/35-git.sh names the same path.
const GitCredentialPath = "/usr/local/bin/corral-git-credential"

// SeedMount is where a box sees its seed directory (read-only): the agent
// state copy under agent/ (provision/30-agent.sh) and, with source =
// "clone", the repository bundle SeedBundle (provision/45-clone.sh).
const SeedMount = "/corral/seed"

// SeedBundle is the repository bundle's file name in the seed directory.
const SeedBundle = "repo.bundle"

// SeedAgent is the agent state copy's directory name in the seed directory.
const SeedAgent = "agent"

// Repo returns the corral-repo script, the box's end of `corral pull`.
func Repo() string { return repo }

// RepoPath is where corral-repo is installed in the guest.
const RepoPath = "/usr/local/bin/corral-repo"

// Request returns corral-request, the box's end of the request channel
// (core/egress RequestPath): a program in the box asks its user for a host
// or a port, with a reason.
func Request() string { return request }

// GitPath is where corral's git wrapper is installed in the guest: ahead
// of /usr/bin/git on every PATH, it adds one line of why when git fails to
// make a repository in the project (the host's name rule refuses it).
const GitPath = "/usr/local/bin/git"

// RequestPath is where corral-request is installed in the guest.
const RequestPath = "/usr/local/bin/corral-request"

// GitShadow returns the script that mounts the git shadow (run by the
// corral-git-shadow unit that provision/44-git-shadow.sh writes).
func GitShadow() string { return gitShadow }

// GitShadowPath is where the git shadow script is installed in the guest;
// provision/44-git-shadow.sh names the same path.
const GitShadowPath = "/usr/local/lib/corral/git-shadow"

// Unit returns corral-unit, the helper that writes, enables and starts the
// systemd units of the provision scripts.
func Unit() string { return unit }

// UnitPath is where corral-unit is installed in the guest; the provision
// scripts call it by this path.
const UnitPath = "/usr/local/lib/corral/unit"

// ApplyNetwork returns the script that applies the network mode (the
// nftables funnel), run by the corral-network unit (provision/40-network.sh).
func ApplyNetwork() string { return applyNetwork }

// ApplyNetworkPath is where ApplyNetwork is installed in the guest.
const ApplyNetworkPath = "/usr/local/lib/corral/apply-network"

// ApplyProject returns the script that mounts the project paths (hide,
// box_dirs), run by the corral-project unit (provision/50-project.sh).
func ApplyProject() string { return applyProject }

// ApplyProjectPath is where ApplyProject is installed in the guest.
const ApplyProjectPath = "/usr/local/lib/corral/apply-project"

// Suspend returns corral-suspend, the box's side of a save (unmount the
// 9p shares qemu cannot save with) and of the resume that follows (clock,
// Lima's readiness files, the shares and the corral units back).
func Suspend() string { return suspend }

// SuspendPath is where corral-suspend is installed in the guest; the sudo
// rule of provision/41-sudo.sh names the same path.
const SuspendPath = "/usr/local/lib/corral/suspend"

// ToolchainRegistries returns the script that prints where the image's
// toolchains download from; `corral golden build` runs it in the golden
// (core/box) and core/toolreg parses its output on the host.
func ToolchainRegistries() string { return toolchainRegistries }

// ProvisionedMarker holds the template hash once provisioning finished.
const ProvisionedMarker = "/etc/corral/provisioned"

// Units are the guest units corral-launch requires to be active.
var Units = []string{"corral-network.service", "corral-project.service", "corral-git-shadow.service"}
