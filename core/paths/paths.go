// Package paths is the one place that knows where corral keeps its host
// state. Every file and directory name under ~/.corral is defined here.
//
//	~/.corral/                 (CORRAL_HOME overrides)
//	  config.toml              global config layer
//	  lima/                    LIMA_HOME, private to corral
//	  boxes/<box>.json         box metadata
//	  goldens/<golden>.json    what a golden image's toolchains download from (core/toolreg)
//	  projects/<box>.toml      trusted per-box config layer (and approvals)
//	  remote-projects/<box>/   projects other machines sent here (corral --host; a clone each)
//	  recent.json              project folders corral used lately (the menu's Projects)
//	  agents/<agent>/          agent state shared by boxes with agent_state = "shared" (opt-in)
//	  agent-templates/<agent>/ host-owned template "seeded" boxes copy; never mounted
//	  seed/<box>/              what a box copies at its first boot (agent state, clone bundle); read-only share
//	  logs/                    audit.jsonl, sessions.jsonl, egress-<box>.jsonl, app.log
//	  snapshots/<box>/         disk snapshots where Lima has none (vz)
//	  run/                     locks and sockets
//	  run/ssh/<box>.sock       control socket of corral's ssh master of a box
//	  run/sessions/<box>/<id>  live host sessions of a box
//	  run/cache/               what sessions compute once (template hash, git identity)
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/core/atomicfile"
)

// EnvHome is the environment variable that overrides the state directory.
const EnvHome = "CORRAL_HOME"

// Layout names every path of corral's host state.
type Layout struct {
	Home string // absolute state directory
}

// Default returns the layout from $CORRAL_HOME, or ~/.corral.
func Default() (Layout, error) {
	if h := os.Getenv(EnvHome); h != "" {
		abs, err := filepath.Abs(h)
		if err != nil {
			return Layout{}, fmt.Errorf("resolving %s=%q: %w", EnvHome, h, err)
		}
		return Layout{Home: abs}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return Layout{}, fmt.Errorf("finding the home directory: %w (set %s)", err, EnvHome)
	}
	return Layout{Home: filepath.Join(home, ".corral")}, nil
}

// GlobalConfig is the global config layer.
func (l Layout) GlobalConfig() string { return filepath.Join(l.Home, "config.toml") }

// HostsFile lists the remote hosts corral runs commands on (core/remote);
// only `corral host add|rm` write it.
func (l Layout) HostsFile() string { return filepath.Join(l.Home, "hosts.toml") }

// LimaHome is the LIMA_HOME corral runs limactl with.
func (l Layout) LimaHome() string { return filepath.Join(l.Home, "lima") }

// RecentProjects is the capped list of project folders corral used lately
// (core/recent), which the menu offers beside the projects with a box.
func (l Layout) RecentProjects() string { return filepath.Join(l.Home, "recent.json") }

// BoxesDir holds box metadata.
func (l Layout) BoxesDir() string { return filepath.Join(l.Home, "boxes") }

// BoxMeta is the metadata file of a box.
func (l Layout) BoxMeta(box string) string { return filepath.Join(l.BoxesDir(), box+".json") }

// ProjectsDir holds the trusted per-box config layers.
func (l Layout) ProjectsDir() string { return filepath.Join(l.Home, "projects") }

// ProjectConfig is the trusted per-box config layer of a box.
func (l Layout) ProjectConfig(box string) string {
	return filepath.Join(l.ProjectsDir(), box+".toml")
}

// RemoteProjectsDir holds the projects other machines send to this one
// when it is their remote host (`corral --host`, docs/REMOTE.md): one git
// clone per box, written only by `corral project receive`.
func (l Layout) RemoteProjectsDir() string { return filepath.Join(l.Home, "remote-projects") }

// RemoteProject is the clone of the project another machine sent for box.
func (l Layout) RemoteProject(box string) string { return filepath.Join(l.RemoteProjectsDir(), box) }

// AgentDir is the shared state directory of an agent, mounted writable into
// every box with agent_state = "shared".
func (l Layout) AgentDir(agent string) string { return filepath.Join(l.Home, "agents", agent) }

// AgentTemplate is the host-owned template of an agent's state: corral
// writes the first-run settings there, and "seeded" boxes get a copy. It is
// never mounted into a box.
func (l Layout) AgentTemplate(agent string) string {
	return filepath.Join(l.Home, "agent-templates", agent)
}

// SeedDir is what a box copies at its first boot (its agent state, the
// clone of its repository). It is shared read-only into that box only, and
// corral never reads back from it: it only writes it before the box is
// created and empties it after the first start.
func (l Layout) SeedDir(box string) string { return filepath.Join(l.Home, "seed", box) }

// NPMCacheDir holds pinned npm tarballs fetched on the host and verified
// (core/pins), shared read-only with golden builds that install from them.
func (l Layout) NPMCacheDir() string { return filepath.Join(l.Home, "cache", "npm") }

// LogsDir holds corral's logs.
func (l Layout) LogsDir() string { return filepath.Join(l.Home, "logs") }

// AuditLog is the append-only audit log.
func (l Layout) AuditLog() string { return filepath.Join(l.LogsDir(), "audit.jsonl") }

// SessionsLog records session start, end and exit code.
func (l Layout) SessionsLog() string { return filepath.Join(l.LogsDir(), "sessions.jsonl") }

// EgressLog is the decision log of a box's broker.
func (l Layout) EgressLog(box string) string {
	return filepath.Join(l.LogsDir(), "egress-"+box+".jsonl")
}

// BrokerLog is the diagnostic log of a box's broker process.
func (l Layout) BrokerLog(box string) string {
	return filepath.Join(l.LogsDir(), "broker-"+box+".log")
}

// AppLog is the menu-bar app's log.
func (l Layout) AppLog() string { return filepath.Join(l.LogsDir(), "app.log") }

// SnapshotsDir holds copy-on-write disk snapshots of a box.
func (l Layout) SnapshotsDir(box string) string { return filepath.Join(l.Home, "snapshots", box) }

// GitGuardDir holds a box's git guard: the fingerprint of what git would
// execute from its project, and copies to revert from (core/gitshadow).
func (l Layout) GitGuardDir(box string) string { return filepath.Join(l.Home, "git-guard", box) }

// GitlinksDir holds a box's private copies of the project's empty
// submodule paths: on Linux qemu each is mounted over its path for the VM,
// so what the box writes there never reaches the host's work tree, where
// the host's git would enter it (core/gitshadow Gitlinks).
func (l Layout) GitlinksDir(box string) string { return filepath.Join(l.Home, "gitlinks", box) }

// HiddenDir holds the empty read-only directory and file that the qemu
// wrapper mounts over the paths a box's config hides (Linux qemu): the VM
// sees them instead of what the host has there.
func (l Layout) HiddenDir() string { return filepath.Join(l.Home, "hidden") }

// RunDir holds locks and sockets.
func (l Layout) RunDir() string { return filepath.Join(l.Home, "run") }

// Lock is the lock file of a named operation (a box, the app).
func (l Layout) Lock(name string) string { return filepath.Join(l.RunDir(), name+".lock") }

// BrokerSocket is the Unix socket a box's broker receives guest connections on.
func (l Layout) BrokerSocket(box string) string { return filepath.Join(l.RunDir(), box+".sock") }

// BrokerControl is the Unix socket on which a box's broker tells the box's
// sessions which credential routes it serves (core/credential).
func (l Layout) BrokerControl(box string) string { return filepath.Join(l.RunDir(), box+".ctl") }

// SSHDir holds the control sockets of corral's own ssh masters (0700:
// whoever can connect to a socket can open sessions in the box).
func (l Layout) SSHDir() string { return filepath.Join(l.RunDir(), "ssh") }

// SSHMaster is the control socket of corral's ssh master of a box. The
// path is at most 31 bytes longer than the home plus the box name, never
// longer than Lima's own ssh socket of the same box (core/project keeps
// that within the socket path limit); ssh appends 17 bytes while it sets
// the socket up, counted in the 31.
func (l Layout) SSHMaster(box string) string { return filepath.Join(l.SSHDir(), box+".sock") }

// RemoteControlDir holds the control sockets of the menu's ssh
// connections to remote hosts, one per host (core/remote
// Runner.ControlDir; 0700).
func (l Layout) RemoteControlDir() string { return filepath.Join(l.RunDir(), "hosts") }

// SessionsDir holds one file per live host session of a box: runtime
// state, written without fsync (after a crash the sessions are gone too).
func (l Layout) SessionsDir(box string) string { return filepath.Join(l.RunDir(), "sessions", box) }

// CacheDir holds what sessions compute once and reuse while its inputs
// keep their identity (see core/box and core/launchenv).
func (l Layout) CacheDir() string { return filepath.Join(l.RunDir(), "cache") }

// GoldensDir holds one record per golden image built (see GoldenRecord).
func (l Layout) GoldensDir() string { return filepath.Join(l.Home, "goldens") }

// GoldenRecord is what golden image name recorded at its build: the
// registries its toolchains use (core/toolreg). It outlives the image:
// boxes cloned from it keep their toolchains group.
func (l Layout) GoldenRecord(name string) string {
	return filepath.Join(l.GoldensDir(), name+".json")
}

// Dirs lists every directory of the layout, parents first.
func (l Layout) Dirs() []string {
	return []string{
		l.Home, l.LimaHome(), l.BoxesDir(), l.GoldensDir(), l.ProjectsDir(),
		filepath.Join(l.Home, "agents"), filepath.Join(l.Home, "agent-templates"),
		filepath.Join(l.Home, "seed"), l.LogsDir(),
		filepath.Join(l.Home, "snapshots"), l.RunDir(), l.SSHDir(),
	}
}

// Ensure creates every directory with mode 0700 and tightens the mode of
// existing ones: the state holds approvals and session logs of other users'
// projects on shared machines.
func (l Layout) Ensure() error {
	var errs []error
	for _, d := range l.Dirs() {
		if err := os.MkdirAll(d, atomicfile.DirMode); err != nil {
			errs = append(errs, fmt.Errorf("creating state directory %s: %w", d, err))
			continue
		}
		if err := os.Chmod(d, atomicfile.DirMode); err != nil {
			errs = append(errs, fmt.Errorf("securing state directory %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
