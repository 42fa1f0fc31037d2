// Package limayaml renders a box's effective config into the Lima instance
// YAML, and hashes it. The hash is the box's template hash: the same
// inputs give the same bytes on every run and machine.
package limayaml

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/agent"
	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/pins"
	"github.com/corral-dev/corral/guest"
	"go.yaml.in/yaml/v3"
)

// Input is everything a rendered template depends on.
type Input struct {
	Platform   config.Platform
	Settings   config.Settings // the effective config
	Box        string
	ProjectDir string // absolute; mounted at the same path in the guest
	AgentDir   string // host directory of the agent's shared state (agent_state = "shared")
	// SeedDir is the box's seed directory on the host (paths.SeedDir),
	// shared read-only at guest.SeedMount when the box copies something at
	// its first boot: a seeded agent state or, with source = "clone", the
	// repository bundle.
	SeedDir string
	// BrokerHost and BrokerPort are where the box's egress broker is seen
	// from the guest (192.168.5.2 through slirp, or 192.168.5.4 with the
	// host-enforced funnel).
	BrokerHost string
	BrokerPort int
	// User is the host user's name. The template names the guest user
	// Lima makes for it (GuestUser: "lima" for a name Linux refuses); the
	// provisioning scripts need it for ownership, runuser and sudo rights.
	User string
	// GitShadowDirs are git directories of the project outside it (a linked
	// worktree's or a submodule's, see gitshadow.Dirs.Outside): shared
	// read-only at the same path so git in the box finds them, and shadowed.
	GitShadowDirs []string
	// Golden renders the project-independent part only: base, packages,
	// toolchains and agent; no mounts and no project parameters.
	Golden bool
	// NPMDir is the host directory of verified pinned npm tarballs
	// (paths.NPMCacheDir); a golden build with claude_install = "npm"
	// shares it read-only at NPMMount and installs Claude Code from it.
	NPMDir string
}

// NPMMount is where a golden build sees Input.NPMDir.
const NPMMount = "/corral/npm"

// Template is a subset of Lima's instance YAML, in Lima's field order.
type Template struct {
	VMType       string            `yaml:"vmType"`
	Arch         string            `yaml:"arch,omitempty"`
	CPUs         int               `yaml:"cpus"`
	Memory       string            `yaml:"memory"`
	Disk         string            `yaml:"disk"`
	Firmware     *Firmware         `yaml:"firmware,omitempty"`
	Images       []Image           `yaml:"images"`
	MountType    string            `yaml:"mountType"`
	Mounts       []Mount           `yaml:"mounts"`
	SSH          SSH               `yaml:"ssh"`
	Containerd   Containerd        `yaml:"containerd"`
	HostResolver HostResolver      `yaml:"hostResolver"`
	PortForwards []PortForward     `yaml:"portForwards"`
	Provision    []Provision       `yaml:"provision"`
	Param        map[string]string `yaml:"param"`
}

type Firmware struct {
	LegacyBIOS bool `yaml:"legacyBIOS"`
}

type File struct {
	Location string `yaml:"location"`
	Cmdline  string `yaml:"cmdline,omitempty"`
}

type Image struct {
	Location string `yaml:"location"`
	Arch     string `yaml:"arch"`
	Digest   string `yaml:"digest,omitempty"`
	Kernel   *File  `yaml:"kernel,omitempty"`
	Initrd   *File  `yaml:"initrd,omitempty"`
}

type Mount struct {
	Location   string `yaml:"location"`
	MountPoint string `yaml:"mountPoint"`
	Writable   bool   `yaml:"writable"`
}

type SSH struct {
	LoadDotSSHPubKeys bool `yaml:"loadDotSSHPubKeys"`
	ForwardAgent      bool `yaml:"forwardAgent"`
}

type Containerd struct {
	System bool `yaml:"system"`
	User   bool `yaml:"user"`
}

type HostResolver struct {
	Enabled bool `yaml:"enabled"`
}

type PortForward struct {
	GuestIP string `yaml:"guestIP"`
	// GuestIPMustBeZero false makes a 0.0.0.0 rule match listeners on any
	// guest address. Lima 2.x defaults it to true for 0.0.0.0 (only
	// wildcard listeners match); 1.2 defaulted it to false.
	GuestIPMustBeZero *bool  `yaml:"guestIPMustBeZero,omitempty"`
	GuestPort         int    `yaml:"guestPort,omitempty"`
	HostIP            string `yaml:"hostIP,omitempty"`
	HostPort          int    `yaml:"hostPort,omitempty"`
	Proto             string `yaml:"proto"`
	Ignore            bool   `yaml:"ignore"`
}

// ignoreRules are the rules that keep Lima from forwarding any guest
// listener: Lima forwards every guest listener to host loopback unless
// told not to, and an empty list means "default rules", so ignore
// explicitly, the same on Lima 1.2 and 2.x (guestIPMustBeZero stated).
func ignoreRules() []PortForward {
	return []PortForward{
		{GuestIP: "127.0.0.1", Proto: "any", Ignore: true},
		{GuestIP: "0.0.0.0", GuestIPMustBeZero: new(false), Proto: "any", Ignore: true},
	}
}

// HostIP is the only host address a forwarded port binds.
const HostIP = "127.0.0.1"

// PortForwards are a box's Lima port forwards for the ports key: one allow
// rule per port, matching a guest listener on any address (Lima takes the
// first rule that matches), bound on the host's 127.0.0.1 only; then the
// ignore rules, which catch every other listener. Lima's hostagent opens
// the forwarded connections from the host (over ssh or its guest agent),
// so a forward gives the guest no egress.
func PortForwards(ports []config.Port) []PortForward {
	var out []PortForward
	for _, p := range ports {
		out = append(out, PortForward{GuestIP: "0.0.0.0", GuestIPMustBeZero: new(false), GuestPort: p.Guest,
			HostIP: HostIP, HostPort: p.Host, Proto: "tcp"})
	}
	return append(out, ignoreRules()...)
}

type Provision struct {
	Mode        string `yaml:"mode"`
	Path        string `yaml:"path,omitempty"`
	Permissions string `yaml:"permissions,omitempty"`
	Content     string `yaml:"content,omitempty"`
	Script      string `yaml:"script,omitempty"`
}

// Rendered is a template and its hash.
type Rendered struct {
	YAML []byte
	Hash string // hex sha256 of YAML
	// Provision names each provision entry by its index, as Lima numbers
	// them in the guest (provision.<mode>/%08d), so a failure can be
	// reported by script name.
	Provision []string
}

// The default guest is Ubuntu 24.04 LTS ("noble"): see docs/PLATFORMS.md
// for why. Its images follow Lima's own pattern (templates/_images/
// ubuntu-24.04.yaml in Lima 2.2.0, from which the serial and digests are
// taken): first a dated serial pinned by digest, then the undated
// "release" directory of the same series, which always holds the newest
// serial. The dated serials are removed upstream after several months;
// Lima tries the images of the VM's arch in order and takes the first
// that downloads (pkg/instance/start.go, the same in 1.2.2), so a box
// still gets a noble image then, unpinned. `corral doctor` says which one
// a new golden build would get (ImageURLs, core/box).
// No variant field: Lima 1.2.2, the oldest supported, does not know it.
const (
	ubuntuSerial  = "release-20260705"
	ubuntuDated   = "https://cloud-images.ubuntu.com/releases/noble/" + ubuntuSerial + "/"
	ubuntuCurrent = "https://cloud-images.ubuntu.com/releases/noble/release/"
)

var defaultImages = []Image{
	{Location: ubuntuDated + "ubuntu-24.04-server-cloudimg-amd64.img", Arch: "x86_64",
		Digest: "sha256:ffe6203da54deeb6db5d2a98a83f9ec8e55f149d3f7ba622e1abe5fa966ee3d6"},
	{Location: ubuntuDated + "ubuntu-24.04-server-cloudimg-arm64.img", Arch: "aarch64",
		Digest: "sha256:7df0201546f75b8bcc1044594c806c35749421ad3c9bc1be2a3ab806cfae39cc"},
	{Location: ubuntuCurrent + "ubuntu-24.04-server-cloudimg-amd64.img", Arch: "x86_64"},
	{Location: ubuntuCurrent + "ubuntu-24.04-server-cloudimg-arm64.img", Arch: "aarch64"},
}

// DefaultImages are the default guest's images for a Go arch, in the
// order Lima tries them: pinned first, then the fallback without digest.
func DefaultImages(goarch string) []Image {
	arch := limaArch(goarch)
	var out []Image
	for _, im := range defaultImages {
		if im.Arch == arch {
			out = append(out, im)
		}
	}
	return out
}

// ImageURLs are the remote images a box with config c would download, in
// Lima's order: the default images when the image key is unset, the
// URL when it names one, nothing for a local file or directory.
func ImageURLs(c config.Settings, goarch string) []Image {
	if c.Image == "" {
		return DefaultImages(goarch)
	}
	if loc := c.Image; strings.HasPrefix(loc, "https://") || strings.HasPrefix(loc, "http://") {
		return []Image{{Location: loc, Arch: limaArch(goarch)}}
	}
	return nil
}

func limaArch(goarch string) string {
	return map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goarch]
}

// Files of a corral image directory (direct kernel boot, see
// packaging/linux/build-image.sh).
const (
	ImageRootfs = "rootfs.qcow2"
	ImageKernel = "vmlinuz"
	ImageInitrd = "initrd.img"
)

// Seeds reports whether a box with config c copies anything from its seed
// directory at first boot.
func Seeds(c config.Settings) bool {
	return c.AgentState == agentstate.Seeded || c.Source == config.SourceClone
}

// Render builds the Lima YAML for in.
func Render(in Input) (Rendered, error) {
	c := in.Settings
	t := Template{
		VMType:       string(c.VMType),
		CPUs:         c.CPUs,
		Memory:       c.Memory,
		Disk:         c.Disk,
		MountType:    string(c.MountType),
		Mounts:       []Mount{},
		SSH:          SSH{LoadDotSSHPubKeys: false, ForwardAgent: false},
		Containerd:   Containerd{},
		HostResolver: HostResolver{Enabled: c.NetworkMode() == config.NetworkFull},
		PortForwards: ignoreRules(),
	}
	imgs, fw, err := images(c.Image, in.Platform)
	if err != nil {
		return Rendered{}, err
	}
	t.Images, t.Firmware = imgs, fw

	t.Arch = limaArch(in.Platform.Arch)

	// SUDO: "all" keeps passwordless sudo; "lima" keeps only Lima's
	// readiness checks (guest/provision/40-network.sh).
	sudo := "lima"
	if c.Profile != config.ProfileStrict && (c.NetworkMode() == config.NetworkFull || c.Sudo) {
		sudo = "all"
	}
	t.Param = map[string]string{
		"AGENT":      c.Agent,
		"NETWORK":    string(c.NetworkMode()),
		"SUDO":       sudo,
		"PACKAGES":   strings.Join(c.Packages, " "),
		"PROXY_HOST": in.BrokerHost,
		"PROXY_PORT": strconv.Itoa(in.BrokerPort),
		"TOOLCHAINS": strings.Join(c.Toolchains, " "),
		"USER":       GuestUser(in.User),
	}
	// The box's agent, as data (core/agent): guest/provision/30-agent.sh
	// links its state directory and runs its install step once (a box
	// cloned from a golden image finds it done). The pinned npm tarballs
	// are shared where the project-independent setup is built: the golden
	// image, or a box of a config that builds none.
	a, pinned, err := AgentPins(c, in.Platform.Arch)
	if err != nil {
		return Rendered{}, err
	}
	t.Param["AGENT_STATE_DIR"] = a.StateDir
	install := a.Install != ""
	if install && len(pinned) > 0 && (in.Golden || !c.Golden) {
		specs := make([]string, len(pinned))
		for i, p := range pinned {
			specs[i] = p.File() + ":" + p.SHA512Hex()
		}
		t.Param["AGENT_NPM"] = strings.Join(specs, " ")
		t.Mounts = append(t.Mounts, Mount{Location: in.NPMDir, MountPoint: NPMMount, Writable: false})
	}
	if !in.Golden {
		t.Param["PROJECT"] = in.ProjectDir
		t.Param["HIDE"] = strings.Join(c.Hide, " ")
		t.Param["BOX_DIRS"] = strings.Join(c.BoxDirs, " ")
		t.Param["SOURCE"] = string(c.Source)
		t.Param["GIT_SHADOW"] = "on"
		if !c.GitShadow {
			t.Param["GIT_SHADOW"] = "off"
		}
		for _, d := range in.GitShadowDirs {
			// One space-separated list in the guest: refuse what it cannot carry.
			if strings.ContainsAny(d, " \t\n\r'\"\\") || !filepath.IsAbs(d) {
				return Rendered{}, hint.New(fmt.Errorf("git directory %q: corral cannot share a path with blanks or quotes into the box", d), "move the repository, or set git_shadow = false in the trusted layer")
			}
		}
		t.Param["GIT_SHADOW_DIRS"] = strings.Join(in.GitShadowDirs, " ")
		if c.Source != config.SourceClone {
			t.Mounts = append(t.Mounts, Mount{Location: in.ProjectDir, MountPoint: in.ProjectDir, Writable: !c.ReadonlyProject})
			if t.Param["GIT_SHADOW"] == "on" {
				for _, d := range in.GitShadowDirs {
					t.Mounts = append(t.Mounts, Mount{Location: d, MountPoint: d, Writable: false})
				}
			}
		}
		// Agent state is per box unless "shared" is chosen explicitly (see
		// core/agentstate): only then does a host directory go in writable.
		if c.AgentState == agentstate.Shared && in.AgentDir != "" {
			t.Mounts = append(t.Mounts, Mount{Location: in.AgentDir, MountPoint: agentstate.GuestDir(c.Agent), Writable: true})
		}
		if Seeds(c) && in.SeedDir != "" {
			t.Mounts = append(t.Mounts, Mount{Location: in.SeedDir, MountPoint: guest.SeedMount, Writable: false})
		}
		for _, m := range c.Mounts {
			mp := m.MountPoint
			if mp == "" {
				mp = m.Location
			}
			t.Mounts = append(t.Mounts, Mount{Location: m.Location, MountPoint: mp, Writable: m.Writable})
		}
	}
	var names []string
	// corral's own programs: one script that writes them, before every
	// other provision script (guest.Installer says why not data files).
	programs := guest.Programs()
	installer, err := guest.Installer(programs)
	if err != nil {
		return Rendered{}, err
	}
	t.Provision = append(t.Provision, Provision{Mode: "system", Script: installer})
	for _, p := range programs {
		names = append(names, p.Path)
	}
	if install {
		t.Provision = append(t.Provision, Provision{Mode: "data", Path: guest.AgentInstallPath, Permissions: "755", Content: a.Install})
		names = append(names, "agent "+a.Name+" install step")
	}
	for _, s := range guest.Provision() {
		t.Provision = append(t.Provision, Provision{Mode: "system", Script: s.Content})
		names = append(names, "guest/provision/"+s.Name)
	}
	if !in.Golden {
		for _, p := range c.Provision {
			// Repository scripts run as the user from the project mount;
			// the path was checked to stay inside the project.
			t.Provision = append(t.Provision, Provision{Mode: "user", Script: repoScript(in.ProjectDir, p)})
			names = append(names, "repository script "+p)
		}
	}
	t.Param["TEMPLATE_HASH"] = "" // filled below: the hash covers everything else
	// but the forwarded ports: corral applies them at every start
	// (SetPortForwards), so changing them is no drift to rebuild for.
	body, err := marshal(t)
	if err != nil {
		return Rendered{}, err
	}
	sum := sha256.Sum256(body)
	t.Param["TEMPLATE_HASH"] = hex.EncodeToString(sum[:])[:16]
	if !in.Golden {
		t.PortForwards = PortForwards(c.Ports())
		// host_ports are applied at every start too (SetHostPorts).
		if hp := HostPortsParam(c.BridgedPorts()); hp != "" {
			t.Param[HostPortsKey] = hp
		}
	}
	out, err := marshal(t)
	if err != nil {
		return Rendered{}, err
	}
	return Rendered{YAML: out, Hash: hex.EncodeToString(sum[:]), Provision: names}, nil
}

// AgentPins returns the box's agent (config agent, from the registry with
// the config's [agents]) and the pinned npm packages its install step
// unpacks for a Go architecture. Claude Code comes from npm only with
// claude_install = "npm" (otherwise its install step runs the official
// installer).
func AgentPins(c config.Settings, goarch string) (agent.Agent, []pins.Package, error) {
	a, err := agent.Find(c.Agents, c.Agent)
	if err != nil {
		return agent.Agent{}, nil, err
	}
	if a.Name == "claude" && c.ClaudeInstall != config.ClaudeInstallNPM {
		return a, nil, nil
	}
	var out []pins.Package
	for _, pat := range a.NPM {
		p, err := pins.Resolve(pat, goarch)
		if err != nil {
			return a, nil, fmt.Errorf("agent %s: %w", a.Name, err)
		}
		out = append(out, p)
	}
	return a, out, nil
}

// SetPortForwards replaces the portForwards of a Lima instance YAML (the
// instance's lima.yaml, which Lima reads at every start) and leaves every
// other node as it was. The result is parsed again and must hold exactly
// rules.
func SetPortForwards(limaYAML []byte, rules []PortForward) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(limaYAML, &doc); err != nil {
		return nil, fmt.Errorf("reading the instance template: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("reading the instance template: not a YAML mapping")
	}
	var value yaml.Node
	if err := value.Encode(rules); err != nil {
		return nil, fmt.Errorf("encoding port forwards: %w", err)
	}
	m := doc.Content[0]
	found := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "portForwards" {
			m.Content[i+1] = &value
			found = true
		}
	}
	if !found {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "portForwards"}, &value)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("writing the instance template: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("writing the instance template: %w", err)
	}
	var back struct {
		PortForwards []PortForward `yaml:"portForwards"`
	}
	if err := yaml.Unmarshal(b.Bytes(), &back); err != nil || !reflect.DeepEqual(back.PortForwards, rules) {
		return nil, fmt.Errorf("writing the instance template: the port forwards did not survive a round trip")
	}
	return b.Bytes(), nil
}

func repoScript(projectDir, rel string) string {
	return "#!/bin/sh\n# repository provision script (from .corral.toml)\nset -eu\ncd " +
		shellQuote(projectDir) + "\nexec sh " + shellQuote(rel) + "\n"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func marshal(t Template) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("# Lima instance template rendered by corral. Do not edit: corral rebuild re-renders it.\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return nil, fmt.Errorf("rendering Lima template: %w", err)
	}
	return b.Bytes(), enc.Close()
}

// images resolves the image key: unset = the default Ubuntu images; a directory = a
// corral image (direct kernel boot); a file or URL = that disk image.
func images(image string, p config.Platform) ([]Image, *Firmware, error) {
	arch := limaArch(p.Arch)
	if image == "" {
		return DefaultImages(p.Arch), nil, nil
	}
	loc := image
	if strings.HasPrefix(loc, "https://") || strings.HasPrefix(loc, "http://") {
		return []Image{{Location: loc, Arch: arch}}, nil, nil
	}
	if strings.HasPrefix(loc, "~/") {
		home, _ := os.UserHomeDir()
		loc = filepath.Join(home, loc[2:])
	}
	st, err := os.Stat(loc)
	if err != nil {
		return nil, nil, hint.New(fmt.Errorf("image %q: %w", image, err), "build the test image with packaging/linux/build-image.sh, or remove the image key")
	}
	if !st.IsDir() {
		return []Image{{Location: loc, Arch: arch}}, nil, nil
	}
	for _, f := range []string{ImageRootfs, ImageKernel, ImageInitrd} {
		if _, err := os.Stat(filepath.Join(loc, f)); err != nil {
			return nil, nil, hint.New(fmt.Errorf("image directory %s lacks %s", loc, f), "rebuild it with packaging/linux/build-image.sh")
		}
	}
	return []Image{{
		Location: filepath.Join(loc, ImageRootfs), Arch: arch,
		Kernel: &File{Location: filepath.Join(loc, ImageKernel), Cmdline: "root=/dev/vda rw console=ttyS0 net.ifnames=0 quiet loglevel=3 audit=0"},
		Initrd: &File{Location: filepath.Join(loc, ImageInitrd)},
	}}, &Firmware{LegacyBIOS: true}, nil
}
