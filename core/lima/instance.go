package lima

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Status is an instance status as limactl reports it.
type Status string

// Statuses of Lima 1.2.2 (pkg/store/instance.go).
const (
	StatusUnknown       Status = ""
	StatusUninitialized Status = "Uninitialized"
	StatusInstalling    Status = "Installing"
	StatusBroken        Status = "Broken"
	StatusStopped       Status = "Stopped"
	StatusRunning       Status = "Running"
)

// Instance is one object of `limactl list --json` (the fields corral uses).
type Instance struct {
	Name          string         `json:"name"`
	Hostname      string         `json:"hostname"`
	Status        Status         `json:"status"`
	Dir           string         `json:"dir"`
	VMType        string         `json:"vmType"`
	Arch          string         `json:"arch"`
	CPUs          int            `json:"cpus"`
	Memory        int64          `json:"memory"` // bytes
	Disk          int64          `json:"disk"`   // bytes
	Message       string         `json:"message"`
	SSHAddress    string         `json:"sshAddress"`
	SSHLocalPort  int            `json:"sshLocalPort"`
	SSHConfigFile string         `json:"sshConfigFile"`
	HostAgentPID  int            `json:"hostAgentPID"`
	DriverPID     int            `json:"driverPID"`
	Protected     bool           `json:"protected"`
	LimaVersion   string         `json:"limaVersion"`
	Config        InstanceConfig `json:"config"`
}

// InstanceConfig is the subset of the resolved lima.yaml (`config` in list output) that corral reads.
type InstanceConfig struct {
	VMType       string            `json:"vmType"`
	MountType    string            `json:"mountType"`
	Mounts       []Mount           `json:"mounts"`
	SSH          SSHConfig         `json:"ssh"`
	HostResolver HostResolver      `json:"hostResolver"`
	Env          map[string]string `json:"env"`
	Param        map[string]string `json:"param"`
}

// Mount is one `mounts:` entry.
type Mount struct {
	Location   string `json:"location"`
	MountPoint string `json:"mountPoint"`
	Writable   bool   `json:"writable"`
}

// SSHConfig is the `ssh:` block.
type SSHConfig struct {
	LocalPort         int  `json:"localPort"`
	LoadDotSSHPubKeys bool `json:"loadDotSSHPubKeys"`
	ForwardAgent      bool `json:"forwardAgent"`
	ForwardX11        bool `json:"forwardX11"`
}

// HostResolver is the `hostResolver:` block.
type HostResolver struct {
	Enabled bool `json:"enabled"`
}

// Version is a limactl release version.
type Version struct {
	Major, Minor, Patch int
	Pre                 string // "beta.0" in 2.0.0-beta.0; "" for a release
}

// MinVersion is the oldest limactl corral accepts; PinnedVersion is the one it is tested with.
var MinVersion = Version{Major: 1, Minor: 2}

// PinnedVersion is the Lima release corral's scripts install and its e2e tests use.
const PinnedVersion = "1.2.2"

func (v Version) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
	if v.Pre != "" {
		s += "-" + v.Pre
	}
	return s
}

// Less reports whether v is older than w. A pre-release is older than its release.
func (v Version) Less(w Version) bool {
	if v.Major != w.Major {
		return v.Major < w.Major
	}
	if v.Minor != w.Minor {
		return v.Minor < w.Minor
	}
	if v.Patch != w.Patch {
		return v.Patch < w.Patch
	}
	return v.Pre != "" && (w.Pre == "" || v.Pre < w.Pre)
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?`) })

// ParseVersion parses `limactl --version` output ("limactl version 1.2.2") or a bare version.
func ParseVersion(s string) (Version, error) {
	s = strings.TrimSpace(s)
	first, _, _ := strings.Cut(s, "\n")
	rest := strings.TrimPrefix(first, "limactl version ")
	rest = strings.TrimPrefix(rest, "v")
	m := versionRE().FindStringSubmatch(rest)
	if m == nil || !strings.HasPrefix(rest, m[0]) {
		return Version{}, fmt.Errorf("parsing limactl version %q: not a version (a build without version ldflags says <unknown>)", first)
	}
	var v Version
	v.Major, _ = strconv.Atoi(m[1])
	v.Minor, _ = strconv.Atoi(m[2])
	v.Patch, _ = strconv.Atoi(m[3])
	v.Pre = m[4]
	return v, nil
}
