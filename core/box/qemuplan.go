package box

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/guestconn"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
	"go.yaml.in/yaml/v3"
)

// QemuPlan is what corral's qemu wrapper does with one VM launch: the
// rewrite options for Lima's command line, and for the stderr line the
// box and network it decided them from. The accelerator is the caller's
// (it probes the host's /dev/kvm, which a plan must not depend on).
type QemuPlan struct {
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
	// repository the box creates there never reaches the host's work tree.
	Private []qemu.PrivateMount
}

// Describe is the one line the wrapper prints (Lima keeps it in the
// instance's ha.stderr.log).
func (p QemuPlan) Describe() string {
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
func (p QemuPlan) DescribeResume() string {
	if p.Options.LoadVM == "" {
		return ""
	}
	return "resuming from snapshot " + p.Options.LoadVM
}

// PlanQemu finds the box a VM launch is for and the network it must get.
// Lima names the instance in -pidfile <LIMA_HOME>/<box>/qemu.pid; that
// LIMA_HOME must be corral's. A box's network comes from its metadata; a
// golden image (no metadata) is judged by its template's param.NETWORK.
// exe is the corral binary; qemu runs guestconn.Exe(exe) per guest
// connection (the small corral-guest-conn beside it if installed).
func PlanQemu(args []string, l paths.Layout, exe string) (QemuPlan, error) {
	pidFile := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "-pidfile" || args[i] == "--pidfile" {
			pidFile = args[i+1]
		}
	}
	if pidFile == "" {
		return QemuPlan{}, errors.New("no -pidfile in the command line: cannot tell which box this is")
	}
	inst := filepath.Dir(pidFile)
	name := filepath.Base(inst)
	if !sameDir(filepath.Dir(inst), l.LimaHome()) {
		return QemuPlan{}, fmt.Errorf("instance %s is not in corral's LIMA_HOME %s", inst, l.LimaHome())
	}
	p := QemuPlan{Box: name}
	m, err := ReadMeta(l, name)
	switch {
	case err == nil:
		p.Network = m.Network
		if !m.GitShadowOff && m.Project != "" {
			d, err := gitshadow.Find(m.Project)
			if err != nil {
				// Fail closed: a git directory corral cannot resolve is one it
				// cannot protect.
				return QemuPlan{}, fmt.Errorf("box %s: protecting the git directory: %w", name, err)
			}
			p.ReadOnly = d.ReadOnly()
			if p.ReadOnly, p.Private, err = planGitlinks(d, l.GitlinksDir(name), p.ReadOnly); err != nil {
				return QemuPlan{}, fmt.Errorf("box %s: %w", name, err)
			}
		}
		if m.Saved != nil {
			p.Options.LoadVM = m.Saved.Tag
		}
		if m.Network == config.NetworkBroker {
			p.Options.Funnel = &qemu.Funnel{GuestFwdPort: m.BrokerPort, GuestConnCmd: funnel.GuestCommand(guestconn.Exe(exe), name)}
			for _, port := range m.HostPorts {
				p.Options.Funnel.Bridges = append(p.Options.Funnel.Bridges, qemu.Bridge{Port: port, Cmd: funnel.BridgeCommand(exe, name, port)})
			}
		}
	case errors.Is(err, ErrNoMeta) && strings.HasPrefix(name, "golden-"):
		if p.Network, err = templateNetwork(filepath.Join(inst, "lima.yaml")); err != nil {
			return QemuPlan{}, fmt.Errorf("golden image %s: %w", name, err)
		}
		if p.Network == config.NetworkBroker {
			return QemuPlan{}, fmt.Errorf("golden image %s: network broker has no broker to funnel to", name)
		}
	default:
		return QemuPlan{}, fmt.Errorf("box %s: %w (corral runs only the boxes it created)", name, err)
	}
	switch p.Network {
	case config.NetworkFull:
	case config.NetworkBroker:
	case config.NetworkOffline:
		p.Options.Offline = true
	default:
		return QemuPlan{}, fmt.Errorf("box %s: unknown network %q", name, p.Network)
	}
	return p, nil
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

// sameDir compares two directories, following symbolic links if the names
// differ.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
