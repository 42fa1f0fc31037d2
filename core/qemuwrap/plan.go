package qemuwrap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/guestconn"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/qemu"
	"go.yaml.in/yaml/v3"
)

// Plan is what corral's qemu wrapper does with one VM launch: the
// rewrite options for Lima's command line, and for the stderr line the
// box and network it decided them from. The accelerator is the caller's
// (it probes the host's /dev/kvm, which a plan must not depend on).
type Plan struct {
	Box     string
	Network config.Network
	Options qemu.Options
	// ReadOnly are the host paths of the project's git metadata (see
	// gitshadow.Dirs.ReadOnly) that qemu must not be able to write. On Linux
	// the wrapper binds them read-only over themselves in a private mount
	// namespace before it execs qemu; elsewhere the guest enforces it.
	ReadOnly []string
	// Private are the project's empty submodule paths, each with a
	// directory of the box's own mounted over it for qemu (Linux), so a
	// repository the box creates there never reaches the host's work tree;
	// and the paths the config hides, each covered by an empty read-only
	// directory or file.
	Private []qemu.PrivateMount
	// Unhidden are hide paths left to the guest's own cover, with why
	// (missing at the start, a symbolic link): the wrapper prints them.
	Unhidden []string
	// NameRule, when set, is enforced for qemu on Linux (core/namerule):
	// no .git name can be made anywhere under its roots (every directory
	// qemu exports), nothing inside an existing one changed. Every box
	// with a project gets it unless its trusted layer says git_shadow =
	// false; golden images (no project) do not.
	NameRule bool
	// Exports are the directories qemu exports to the guest (-virtfs
	// path=), the name rule's roots, with no symbolic link in them.
	Exports []string
}

// Describe is the one line the wrapper prints (Lima keeps it in the
// instance's ha.stderr.log).
func (p Plan) Describe() string {
	switch {
	case p.Options.Funnel != nil:
		d := fmt.Sprintf("network %s: slirp restrict=on, only guestfwd %s:%d to the broker", p.Network, funnel.GuestAddr, p.Options.Funnel.GuestFwdPort)
		for _, b := range p.Options.Funnel.Bridges {
			d += fmt.Sprintf(", %s:%d to the host's 127.0.0.1:%d", funnel.GuestAddr, b.Port, b.Port)
		}
		return d
	case p.Options.Offline:
		return fmt.Sprintf("network %s: slirp restrict=on, no guestfwd", p.Network)
	}
	return fmt.Sprintf("network %s: unrestricted slirp", p.Network)
}

// DescribeResume is the line the wrapper prints when it resumes a saved
// box, or "".
func (p Plan) DescribeResume() string {
	if p.Options.LoadVM == "" {
		return ""
	}
	return "resuming from snapshot " + p.Options.LoadVM
}

// DescribeMemory is the line the wrapper prints about the balloon.
func (p Plan) DescribeMemory() string {
	if p.Options.Balloon {
		return "memory: virtio-balloon with free-page reporting (the guest's freed pages return to the host)"
	}
	return "memory: no balloon (the saved state was made without one)"
}

// NewPlan finds the box a VM launch is for and the network it must get.
// Lima names the instance in -pidfile <LIMA_HOME>/<box>/qemu.pid; that
// LIMA_HOME must be corral's. A box's network comes from its metadata; a
// golden image (no metadata) is judged by its template's param.NETWORK.
// exe is the corral binary; qemu runs guestconn.Exe(exe) per guest
// connection (the small corral-guest-conn beside it if installed).
func NewPlan(args []string, l paths.Layout, exe string) (Plan, error) {
	pidFile := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-pidfile" || args[i] == "--pidfile" {
			pidFile = args[i+1]
		}
	}
	if pidFile == "" {
		return Plan{}, errors.New("no -pidfile in the command line: cannot tell which box this is")
	}
	inst := filepath.Dir(pidFile)
	name := filepath.Base(inst)
	if !project.SameDir(filepath.Dir(inst), l.LimaHome()) {
		return Plan{}, fmt.Errorf("instance %s is not in corral's LIMA_HOME %s", inst, l.LimaHome())
	}
	p := Plan{Box: name}
	m, err := boxmeta.Read(l, name)
	switch {
	case err == nil:
		p.Network = m.Network
		if !m.GitShadowOff && m.Project != "" {
			p.NameRule = true
			if p.Exports, err = exports(args); err != nil {
				return Plan{}, fmt.Errorf("box %s: %w", name, err)
			}
		}
		if !m.GitShadowOff && m.Project != "" {
			d, err := gitshadow.Find(m.Project)
			if err != nil {
				// Fail closed: a git directory corral cannot resolve is one it
				// cannot protect.
				return Plan{}, fmt.Errorf("box %s: protecting the git directory: %w", name, err)
			}
			p.ReadOnly = d.ReadOnly()
			if p.ReadOnly, p.Private, err = planGitlinks(d, l.GitlinksDir(name), p.ReadOnly); err != nil {
				return Plan{}, fmt.Errorf("box %s: %w", name, err)
			}
		}
		if m.Project != "" && len(m.Hide) > 0 {
			hidden, unhidden, err := planHide(m.Project, m.Hide, l.HiddenDir())
			if err != nil {
				return Plan{}, fmt.Errorf("box %s: %w", name, err)
			}
			p.Private, p.Unhidden = append(p.Private, hidden...), unhidden
		}
		// Every boot gets the balloon; a resume only when the saved VM
		// had it (a saved state loads only into the same machine).
		p.Options.Balloon = true
		if m.Saved != nil {
			p.Options.LoadVM = m.Saved.Tag
			p.Options.Balloon = m.Saved.Balloon
		}
		if m.Network == config.NetworkBroker {
			p.Options.Funnel = &qemu.Funnel{GuestFwdPort: m.BrokerPort, GuestConnCmd: funnel.GuestCommand(guestconn.Exe(exe), name)}
			for _, port := range m.HostPorts {
				p.Options.Funnel.Bridges = append(p.Options.Funnel.Bridges, qemu.Bridge{Port: port, Cmd: funnel.BridgeCommand(exe, name, port)})
			}
		}
	case errors.Is(err, boxmeta.ErrNotFound) && golden.Is(name):
		if p.Network, err = templateNetwork(filepath.Join(inst, "lima.yaml")); err != nil {
			return Plan{}, fmt.Errorf("golden image %s: %w", name, err)
		}
		if p.Network == config.NetworkBroker {
			return Plan{}, fmt.Errorf("golden image %s: network broker has no broker to funnel to", name)
		}
		// A golden build (package installs, toolchains) frees much of what
		// it used; it is never saved, so nothing constrains its machine.
		p.Options.Balloon = true
	default:
		return Plan{}, fmt.Errorf("box %s: %w (corral runs only the boxes it created)", name, err)
	}
	switch p.Network {
	case config.NetworkFull:
	case config.NetworkBroker:
	case config.NetworkOffline:
		p.Options.Offline = true
	default:
		return Plan{}, fmt.Errorf("box %s: unknown network %q", name, p.Network)
	}
	return p, nil
}

// exports reads the directories qemu will export (-virtfs local,…,path=P;
// qemu doubles a comma inside a value), each with its symbolic links
// resolved: the name rule compares them with paths the kernel resolved.
func exports(args []string) ([]string, error) {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] != "-virtfs" && args[i] != "--virtfs" {
			continue
		}
		for _, opt := range qemu.SplitOpts(args[i+1]) {
			v, ok := strings.CutPrefix(opt, "path=")
			if !ok {
				continue
			}
			if !filepath.IsAbs(v) {
				return nil, fmt.Errorf("the exported directory %q is not an absolute path", v)
			}
			// A directory that does not exist (yet) is kept as named: qemu
			// fails to export it anyway.
			real, err := filepath.EvalSymlinks(v)
			if err != nil {
				real = filepath.Clean(v)
			}
			out = append(out, real)
		}
	}
	return out, nil
}

// planGitlinks adds the project's submodule paths to a plan (see
// gitshadow.Gitlinks): a populated one's .git entry and the git directory
// it names are read-only like the project's own .git; an empty one gets a
// private directory under dir (named by a hash of its path, so a box keeps
// its submodule work across restarts); anything else at such a path fails
// the start, with what to do.
func planGitlinks(d gitshadow.Dirs, dir string, readOnly []string) ([]string, []qemu.PrivateMount, error) {
	links, err := d.Gitlinks()
	if err != nil {
		return nil, nil, fmt.Errorf("protecting the project's submodule paths: %w", err)
	}
	var private []qemu.PrivateMount
	for _, g := range links {
		switch g.Kind {
		case gitshadow.GitlinkPopulated:
			readOnly = append(readOnly, g.DotGit)
			if g.GitDir != "" {
				readOnly = append(readOnly, g.GitDir)
			}
		case gitshadow.GitlinkEmpty:
			sum := sha256.Sum256([]byte(g.Path))
			private = append(private, qemu.PrivateMount{Source: filepath.Join(dir, hex.EncodeToString(sum[:8])), Target: g.Path})
		default:
			return nil, nil, hint.New(fmt.Errorf("%w: %s: %s", gitshadow.ErrGitlink, g.Path, g.Why),
				fmt.Sprintf("a submodule path must be a directory (git would follow anything else); look at it, remove it (rm %s) and start the box again", g.Path))
		}
	}
	return gitshadow.Outermost(readOnly), private, nil
}

// planHide covers each hidden path of the project for qemu with an empty
// read-only directory or file of the same type, under dir (created here).
// A path is taken only if every component below the project is a real
// directory and the last one a directory or a regular file: a path that
// does not exist yet, or passes through a symbolic link, has nothing of the
// host's to hide under the project mount (a link is resolved by the guest,
// inside the guest) and is left to the guest's tmpfs, reported in unhidden.
// The wrapper checks the type again on the descriptor it mounts over.
func planHide(project string, hide []string, dir string) (private []qemu.PrivateMount, unhidden []string, err error) {
	emptyDir, emptyFile := filepath.Join(dir, "empty"), filepath.Join(dir, "empty-file")
	for _, rel := range hide {
		clean := filepath.Clean(rel)
		if filepath.IsAbs(clean) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, nil, fmt.Errorf("hide path %q is not inside the project", rel)
		}
		target, why := filepath.Join(project, clean), ""
		at := project
		for _, part := range strings.Split(clean, "/") {
			at = filepath.Join(at, part)
			fi, err := os.Lstat(at)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				why = "not there at the start"
			case err != nil:
				return nil, nil, fmt.Errorf("hiding %s: %w", target, err)
			case fi.Mode()&fs.ModeSymlink != 0:
				why = "a symbolic link (" + at + ")"
			case at != target && !fi.IsDir():
				why = "not under a directory"
			case at == target && fi.IsDir():
				private = append(private, qemu.PrivateMount{Source: emptyDir, Target: target, Kind: qemu.PrivateHidden})
			case at == target && fi.Mode().IsRegular():
				private = append(private, qemu.PrivateMount{Source: emptyFile, Target: target, Kind: qemu.PrivateHidden})
			case at == target:
				why = "neither a directory nor a regular file"
			}
			if why != "" {
				unhidden = append(unhidden, clean+": "+why)
				break
			}
		}
	}
	if len(private) > 0 {
		if err := ensureEmpty(emptyDir, emptyFile); err != nil {
			return nil, nil, err
		}
	}
	return private, unhidden, nil
}

// ensureEmpty creates the empty directory and file that hide paths are
// covered with, and fails if either is not empty.
func ensureEmpty(emptyDir, emptyFile string) error {
	if err := os.MkdirAll(emptyDir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", emptyDir, err)
	}
	if ents, err := os.ReadDir(emptyDir); err != nil || len(ents) > 0 {
		return fmt.Errorf("%s must be an empty directory (%d entries, %v)", emptyDir, len(ents), err)
	}
	if err := os.Chmod(emptyDir, 0o500); err != nil {
		return err
	}
	f, err := os.OpenFile(emptyFile, os.O_CREATE|os.O_RDONLY, 0o400)
	if err != nil {
		return fmt.Errorf("creating %s: %w", emptyFile, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		return fmt.Errorf("%s must be an empty regular file", emptyFile)
	}
	return nil
}

// templateNetwork reads param.NETWORK from a Lima instance template.
func templateNetwork(path string) (config.Network, error) {
	b, err := limayaml.ReadInstance(path)
	if err != nil {
		return "", fmt.Errorf("reading its template: %w", err)
	}
	var t struct {
		Param map[string]string `yaml:"param"`
	}
	if err := yaml.Unmarshal(b, &t); err != nil {
		return "", fmt.Errorf("reading its template %s: %w", path, err)
	}
	return config.Network(t.Param["NETWORK"]), nil
}
