package boxmeta

import (
	"runtime"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hostinfo"
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
	open, err := OpenRequestsErr(l, boxName, project)
	return open.Pending, err
}

// OpenRequests are a box's repository requests not granted: the pending
// ones, which the user may approve, and the refused ones, which the grant
// check refuses (a verdict: they can never be approved).
type OpenRequests struct {
	Pending, Refused []config.RepoRequest
}

// OpenRequestsErr is PendingRequestsErr with the refused requests beside
// the pending ones, for `corral ls`, `corral info`, and the menu.
func OpenRequestsErr(l paths.Layout, boxName, project string) (OpenRequests, error) {
	if project == "" {
		return OpenRequests{}, nil
	}
	res, err := config.Load(config.Request{Platform: HostPlatform(), ProjectDir: project,
		GlobalPath: l.GlobalConfig(), TrustedPath: l.ProjectConfig(boxName)})
	return OpenRequests{Pending: res.Pending(), Refused: res.RefusedRequests()}, err
}
