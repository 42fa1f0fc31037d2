// Package box is the lifecycle service shared by the CLI and the menu-bar
// app: it resolves a project to its box, loads the box's layered config,
// renders its Lima template, and creates, starts, stops and removes boxes.
package box

import (
	"fmt"
	"os"
	"os/user"
	"runtime"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/hostinfo"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// HostPlatform is the platform corral runs on.
func HostPlatform() config.Platform {
	return config.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
}

// Resolved is a project with its box name and effective config.
type Resolved struct {
	Project  project.Project
	Platform config.Platform
	Loaded   config.Result // the effective config (Loaded.Config), with its warnings and origins
}

// Agent is the agent name names in r's config (a built-in or an
// [agents.NAME] of a trusted layer): the one lookup a command makes.
func (r Resolved) Agent(name string) (agent.Agent, error) {
	return agent.Find(r.Loaded.Config.Agents, name)
}

// ResolveOptions tune Resolve.
type ResolveOptions struct {
	Dir      string        // project directory; "" is the working directory
	Flags    config.Config // the flags layer
	Platform config.Platform
	Snapshot *config.Snapshot // the repository file as read earlier; nil reads it now
}

// Resolve finds the project's box and loads its config. A config error is
// returned together with the partial result, so callers can show warnings
// and every problem at once.
func Resolve(l paths.Layout, opt ResolveOptions) (Resolved, error) {
	proj, err := ResolveProject(l, opt.Dir)
	if err != nil {
		return Resolved{}, err
	}
	host, err := hostinfo.Read()
	if err != nil {
		return Resolved{}, err
	}
	if opt.Platform.OS == "" {
		opt.Platform = HostPlatform()
	}
	res, err := config.Load(config.Request{
		Platform:    opt.Platform,
		ProjectDir:  proj.Dir,
		GlobalPath:  l.GlobalConfig(),
		TrustedPath: l.ProjectConfig(proj.Box),
		Flags:       opt.Flags,
		HostMemory:  host.MemoryBytes,
		HostCPUs:    host.CPUs,
		Snapshot:    opt.Snapshot,
	})
	return Resolved{Project: proj, Platform: opt.Platform, Loaded: res}, err
}

// PendingRequests returns the entries a box's repository requests that no
// host layer allows yet (config.Result.Pending), for `corral ls`,
// `corral egress` and the menu. Host caps play no part in it, so none are
// read.
func PendingRequests(l paths.Layout, boxName, project string) []config.RepoRequest {
	p, _ := PendingRequestsErr(l, boxName, project)
	return p
}

// PendingRequestsErr is PendingRequests with the error of loading the
// box's config (it names the file): when the repository's .corral.toml
// does not load, what it requests is unknown, and a caller that shows the
// requests says so instead of showing none.
func PendingRequestsErr(l paths.Layout, boxName, project string) ([]config.RepoRequest, error) {
	if project == "" {
		return nil, nil
	}
	res, err := config.Load(config.Request{Platform: HostPlatform(), ProjectDir: project,
		GlobalPath: l.GlobalConfig(), TrustedPath: l.ProjectConfig(boxName)})
	return res.Pending(), err
}

// BrokerGuestHost is the address the guest reaches the broker at: the
// slirp gateway, which maps to the host's loopback.
const BrokerGuestHost = "192.168.5.2"

// BrokerGuestHostFor is where a box's guest reaches its broker: under the
// host funnel (qemu, broker or offline mode) qemu's guestfwd address
// funnel.GuestAddr (192.168.5.4), else the slirp gateway BrokerGuestHost.
func BrokerGuestHostFor(p config.Platform, c config.Settings) string {
	if funnel.Applies(p.OS, c.VMType, c.NetworkMode()) {
		return funnel.GuestAddr
	}
	return BrokerGuestHost
}

// Render renders the Lima template of a resolved box.
func Render(l paths.Layout, r Resolved, brokerPort int, golden bool) (limayaml.Rendered, error) {
	in, err := renderInput(l, r, brokerPort, golden)
	if err != nil {
		return limayaml.Rendered{}, err
	}
	rendered, err := limayaml.Render(in)
	if err != nil {
		return rendered, fmt.Errorf("rendering the template of box %s: %w", r.Project.Box, err)
	}
	return rendered, nil
}

// renderInput is everything Render reads besides the corral binary.
func renderInput(l paths.Layout, r Resolved, brokerPort int, golden bool) (limayaml.Input, error) {
	c := r.Loaded.Settings()
	var gitDirs []string
	if !golden && c.GitShadow {
		d, err := gitshadow.Find(r.Project.Dir)
		if err != nil {
			return limayaml.Input{}, fmt.Errorf("box %s: %w", r.Project.Box, err)
		}
		gitDirs = d.Outside()
	}
	return limayaml.Input{
		GitShadowDirs: gitDirs,
		Platform:      r.Platform,
		Settings:      c,
		Box:           r.Project.Box,
		ProjectDir:    r.Project.Dir,
		AgentDir:      l.AgentDir(c.Agent),
		SeedDir:       l.SeedDir(r.Project.Box),
		BrokerHost:    BrokerGuestHostFor(r.Platform, c),
		BrokerPort:    brokerPort,
		Golden:        golden,
		NPMDir:        l.NPMCacheDir(),
		User:          limaUser(),
	}, nil
}

// BrokerPortFor returns the broker port persisted in the box's metadata,
// or the deterministic default for a box that has none yet.
func BrokerPortFor(l paths.Layout, box string) int {
	if m, err := ReadMeta(l, box); err == nil && m.BrokerPort != 0 {
		return m.BrokerPort
	}
	return egress.BrokerPort(box)
}

// limaUser is the guest user Lima creates: the host user's name.
func limaUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return os.Getenv("USER")
}
