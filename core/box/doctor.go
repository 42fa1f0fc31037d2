package box

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/funnel"
	"github.com/corral-dev/corral/core/golden"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/hostbin"
	"github.com/corral-dev/corral/core/hostinfo"
	"github.com/corral-dev/corral/core/launchenv"
	"github.com/corral-dev/corral/core/lima"
	"github.com/corral-dev/corral/core/limayaml"
	"github.com/corral-dev/corral/core/namerule"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/qemu"
	"github.com/corral-dev/corral/core/secret"
	"github.com/corral-dev/corral/core/untrusted"
	"github.com/corral-dev/corral/core/version"
	"github.com/corral-dev/corral/guest"
)

// Check is one finding of `corral doctor`. A failed check names its fix:
// a command to run or the config key to change.
type Check struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Fix    string `json:"fix"`
}

func pass(name, detail string) Check { return Check{Check: name, OK: true, Detail: detail} }

func fail(name, detail, fix string) Check {
	return Check{Check: name, Detail: detail, Fix: fix}
}

// DirFact is the state of one state directory.
type DirFact struct {
	Path string
	Mode fs.FileMode // permission bits
	UID  int
	Err  error // stat error; a missing directory is not a problem
}

// HostFacts is what the host checks look at. Service.HostFacts reads them;
// tests make them up.
type HostFacts struct {
	GOOS        string
	Arch        string // Go arch
	LimaVersion lima.Version
	LimaErr     error
	LimactlPath string // the limactl corral runs ("" when unknown)
	// LimaInstall is how corral was installed, so the Lima fix names the
	// user's way to install ("" is Homebrew on macOS, the source tree elsewhere).
	LimaInstall lima.Install
	QemuPath    string // Linux
	QemuErr     error
	QemuImgPath string // Linux
	QemuImgErr  error
	// GitCLIs are the paths of gh and glab as hostbin.Find resolves them
	// ("" when not installed); corral asks them for git tokens.
	GitCLIs    map[string]string
	VZ         bool // macOS: Virtualization.framework usable
	VZDetail   string
	KVM        bool // Linux
	KVMReason  string
	UID        int
	Dirs       []DirFact
	LimaHome   string
	MaxNameLen int
	BoxNames   []string
	HostMemory uint64
	Running    []Status // every box; only running ones count
	Idle       []string
	// Keychain is the result of reading an item that does not exist: nil
	// or ErrNotFound means the store answers.
	Keychain error
	// KeychainUsers are the boxes whose config has keychain_env.
	KeychainUsers []string
	// UserNS is qemu.CheckNamespaces' answer (Linux): nil means qemu can be
	// given the project's git directory read-only.
	UserNS error
	// GitShadowOff are the boxes that opted out of the git shadow.
	GitShadowOff []string
	// KeychainItems are the keychain items boxes read, probed without a
	// dialog (only when the store is a secret.Prober: macOS).
	KeychainItems []KeychainItem
	// Images are the HEAD answers for the default guest images (nil when
	// not probed).
	Images []ImageProbe
	// QemuUsers are the boxes whose config sets vm_type = "qemu" (macOS:
	// only they need qemu). QemuFirmware is the real qemu's share/qemu.
	QemuUsers    []string
	QemuFirmware string
}

// KeychainItem is one keychain item a box reads, as Probe found it.
type KeychainItem struct {
	Boxes            []string
	Service, Account string
	Access           secret.Access
	Err              error
}

// HostChecks turns host facts into checks. It is pure.
func HostChecks(f HostFacts) []Check {
	var out []Check

	const limaName = "lima"
	limactl := "limactl"
	if f.LimactlPath != "" {
		limactl = f.LimactlPath
	}
	switch {
	case f.LimaErr != nil:
		out = append(out, fail(limaName, f.LimaErr.Error(), hint.Or(f.LimaErr, limaInstallFix(f, false))))
	case f.LimaVersion.Less(lima.MinVersion):
		out = append(out, fail(limaName, fmt.Sprintf("%s %s is older than %s", limactl, f.LimaVersion, lima.MinVersion),
			limaInstallFix(f, true)))
	case slices.Contains(version.LimaTestedVersions, f.LimaVersion.String()):
		out = append(out, pass(limaName, limactl+" "+f.LimaVersion.String()+" (the version corral is tested with)"))
	default:
		out = append(out, pass(limaName, fmt.Sprintf("%s %s (corral is tested with %s)", limactl, f.LimaVersion, version.LimaTested)))
	}

	switch f.GOOS {
	case "linux":
		pkg := "qemu-system-x86"
		if f.Arch == "arm64" {
			pkg = "qemu-system-arm"
		}
		if f.QemuErr != nil {
			out = append(out, fail("qemu", f.QemuErr.Error(), "sudo apt-get install "+pkg))
		} else {
			out = append(out, pass("qemu", f.QemuPath))
		}
		if f.QemuImgErr != nil {
			out = append(out, fail("qemu-img", f.QemuImgErr.Error()+" (Lima makes disks and snapshots with it)", "sudo apt-get install qemu-utils"))
		} else {
			out = append(out, pass("qemu-img", cmp.Or(f.QemuImgPath, "found")))
		}
		if f.UserNS != nil {
			out = append(out, fail("git shadow", "qemu cannot get a private user and mount namespace, so boxes of git projects refuse to start: "+f.UserNS.Error(),
				"allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0) and install util-linux 2.38 or later; or set git_shadow = false in a box's trusted layer (the box may then write .git; the host guard reverts what it changes)"))
		} else {
			out = append(out, pass("git shadow", "host-enforced: qemu sees each project's git directory read-only (private user and mount namespace)"))
		}
		if f.KVM {
			out = append(out, pass("acceleration", "KVM"))
		} else {
			out = append(out, pass("acceleration", "TCG (software emulation, slower): "+f.KVMReason))
		}
	case "darwin":
		out = append(out, pass("git shadow", "guest-enforced: the box mounts the git directory read-only (guest root could undo it); the host guard reverts changes"))
		if f.VZ {
			out = append(out, pass("vz", f.VZDetail))
		} else {
			out = append(out, fail("vz", f.VZDetail, `update to macOS 13 or later, or set vm_type = "qemu" (and brew install qemu)`))
		}
		out = append(out, darwinQemuChecks(f)...)
	}

	var clis []string
	for _, name := range []string{"gh", "glab"} {
		clis = append(clis, name+" "+cmp.Or(f.GitCLIs[name], "not installed"))
	}
	out = append(out, pass("git host CLIs", strings.Join(clis, ", ")))

	var dirProblems, dirFixes []string
	for _, d := range f.Dirs {
		switch {
		case errors.Is(d.Err, fs.ErrNotExist):
		case d.Err != nil:
			dirProblems = append(dirProblems, d.Err.Error())
		default:
			if d.UID != f.UID {
				dirProblems = append(dirProblems, fmt.Sprintf("%s is owned by uid %d, not you (uid %d)", d.Path, d.UID, f.UID))
				dirFixes = append(dirFixes, fmt.Sprintf("sudo chown %d %s", f.UID, d.Path))
			}
			if d.Mode&0o077 != 0 {
				dirProblems = append(dirProblems, fmt.Sprintf("%s has mode %04o, not 0700", d.Path, d.Mode))
				dirFixes = append(dirFixes, "chmod 700 "+d.Path)
			}
		}
	}
	if len(dirProblems) > 0 {
		out = append(out, fail("state directory", strings.Join(dirProblems, "; "), strings.Join(dirFixes, " && ")))
	} else {
		out = append(out, pass("state directory", "private (0700, yours)"))
	}

	var long []string
	for _, n := range f.BoxNames {
		if len(n) > f.MaxNameLen {
			long = append(long, n)
		}
	}
	switch {
	case len(long) > 0:
		out = append(out, fail("socket paths", fmt.Sprintf("under %s box names may have at most %d bytes; too long: %s (their sockets exceed %d bytes)",
			f.LimaHome, max(f.MaxNameLen, 0), strings.Join(long, ", "), project.MaxSockPath),
			"set CORRAL_HOME to a shorter directory, or recreate those boxes with shorter names"))
	case f.MaxNameLen < 8:
		out = append(out, fail("socket paths", fmt.Sprintf("under %s box names may have at most %d bytes", f.LimaHome, max(f.MaxNameLen, 0)),
			"set CORRAL_HOME to a shorter directory"))
	default:
		out = append(out, pass("socket paths", fmt.Sprintf("box names up to %d bytes fit", f.MaxNameLen)))
	}

	b := CheckBudget(f.Running, 0, f.HostMemory, f.Idle)
	switch {
	case f.HostMemory == 0:
		out = append(out, pass("memory budget", "host RAM unknown"))
	case b.Level == BudgetRefuse:
		out = append(out, fail("memory budget", fmt.Sprintf("running boxes' memory caps %s exceed the host's %s",
			config.FormatSize(b.UsedCaps), config.FormatSize(b.HostBytes)), "corral stop --idle, or lower memory in a box's config"))
	default:
		out = append(out, pass("memory budget", fmt.Sprintf("running boxes' memory caps %s of %s host RAM",
			config.FormatSize(b.UsedCaps), config.FormatSize(b.HostBytes))))
	}

	if len(f.GitShadowOff) > 0 {
		out = append(out, pass("git shadow opt-out", "boxes "+strings.Join(f.GitShadowOff, ", ")+" may write their project's .git (git_shadow = false); the host guard reverts changes to what git executes"))
	}

	switch {
	case f.Keychain == nil || errors.Is(f.Keychain, secret.ErrNotFound):
		out = append(out, pass("keychain", "reachable"))
	case len(f.KeychainUsers) == 0:
		out = append(out, pass("keychain", "unavailable, and no box uses keychain_env: "+f.Keychain.Error()))
	default:
		out = append(out, fail("keychain", fmt.Sprintf("unavailable, and boxes %s use keychain_env: %v", strings.Join(f.KeychainUsers, ", "), f.Keychain),
			hint.Or(f.Keychain, "unlock or start the OS keychain")))
	}
	out = append(out, keychainItemChecks(f.GOOS, f.KeychainItems)...)
	if f.Images != nil {
		out = append(out, imageCheck(f.Images))
	}
	return out
}

// darwinQemuChecks: with vz nothing needs qemu; a box with vm_type =
// "qemu" needs qemu-system, qemu-img and the UEFI firmware Lima finds
// through ~/.corral/run/share/qemu (linked to the real qemu's share/qemu).
func darwinQemuChecks(f HostFacts) []Check {
	users := strings.Join(f.QemuUsers, ", ")
	if len(f.QemuUsers) == 0 {
		if f.QemuErr != nil {
			return []Check{pass("qemu", `not installed; only vm_type = "qemu" needs it (vz is the default)`)}
		}
		return []Check{pass("qemu", f.QemuPath+` (used only with vm_type = "qemu")`)}
	}
	var out []Check
	if f.QemuErr != nil {
		out = append(out, fail("qemu", fmt.Sprintf("boxes %s set vm_type = \"qemu\" but no qemu-system was found: %v", users, f.QemuErr),
			`brew install qemu, or remove vm_type = "qemu" from those boxes' config (vz is the default)`))
	} else {
		out = append(out, pass("qemu", f.QemuPath))
		if f.QemuFirmware == "" {
			out = append(out, fail("qemu firmware", "no share/qemu beside "+f.QemuPath+": Lima cannot find the UEFI firmware for boxes "+users,
				"brew reinstall qemu"))
		} else {
			out = append(out, pass("qemu firmware", f.QemuFirmware))
		}
	}
	if f.QemuImgErr != nil {
		out = append(out, fail("qemu-img", f.QemuImgErr.Error()+" (Lima makes qemu disks with it)", "brew install qemu"))
	} else {
		out = append(out, pass("qemu-img", cmp.Or(f.QemuImgPath, "found")))
	}
	return out
}

// keychainItemChecks: an item whose read would ask the person (the
// Keychain's "allow access" dialog or an unlock on macOS, the keyring's
// unlock prompt on Linux) is a failure: the box's broker never asks
// (secret.Silent) and refuses the agent's requests that need it, and
// sessions without a terminal read it with nobody watching.
func keychainItemChecks(goos string, items []KeychainItem) []Check {
	ask, later := "a Keychain dialog (allow access, or unlock)", "or start a session in Terminal once and choose Always Allow"
	if goos != "darwin" {
		ask, later = "the keyring's unlock prompt (the item is in a locked collection)", "or unlock the keyring (log in to the desktop, or Seahorse) before boxes start"
	}
	var out []Check
	for _, it := range items {
		name := fmt.Sprintf("keychain item %s/%s", display.Text(it.Service, 80), display.Text(it.Account, 80))
		boxes := strings.Join(it.Boxes, ", ")
		set := fmt.Sprintf("corral secret set --service %s --account %s", it.Service, it.Account)
		switch it.Access {
		case secret.AccessReadable:
			out = append(out, pass(name, "corral reads it without asking (boxes "+boxes+")"))
		case secret.AccessPrompts:
			out = append(out, fail(name, "reading it raises "+ask+": the broker, which never asks, refuses the agent's requests that need it, and sessions without a terminal read it with nobody watching (boxes "+boxes+")",
				"store it with "+set+" (corral then owns the item), "+later))
		case secret.AccessMissing:
			out = append(out, fail(name, "no such item (boxes "+boxes+")", set))
		default:
			detail := "could not tell whether reading it asks"
			if it.Err != nil {
				detail += ": " + it.Err.Error()
			}
			out = append(out, pass(name, detail))
		}
	}
	return out
}

// limaInstallFix is the fix of a missing (or, tooOld, an outdated) Lima
// for the way corral was installed (lima.InstallHint).
func limaInstallFix(f HostFacts, tooOld bool) string {
	how := f.LimaInstall
	if how == "" {
		how = lima.DetectInstall(f.GOOS, "", func(string) bool { return false })
	}
	return lima.InstallHint(how, f.Arch, tooOld)
}

// doctorProbeService is the keychain item the keychain check reads; it is
// never stored, so "not found" proves the store answers.
const doctorProbeService = "corral-doctor-probe"

// keychainRefs are the keychain items a box's sessions and broker read:
// keychain_env, [credentials.NAME] keychain and upstream_proxy's keychain.
func keychainRefs(c config.Settings) []config.SecretRef {
	var out []config.SecretRef
	for _, r := range c.KeychainEnv {
		out = append(out, r)
	}
	for _, cr := range c.Credentials {
		if cr.Keychain != nil {
			out = append(out, *cr.Keychain)
		}
	}
	if k := c.UpstreamProxy.Keychain; k != nil {
		out = append(out, *k)
	}
	return out
}

// HostFactsOptions are the optional parts of HostFacts.
type HostFactsOptions struct {
	// ImagesFor is a project directory: the guest images a new box there
	// would download are probed with HEAD requests (network). "" skips.
	ImagesFor string
}

// imagesFor are the remote images a new box in dir would download: its
// effective image key, or the defaults when its config does not load.
func (s *Service) imagesFor(dir string) []limayaml.Image {
	r, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: dir, Platform: boxmeta.HostPlatform()})
	if err != nil {
		return limayaml.DefaultImages(runtime.GOARCH)
	}
	return limayaml.ImageURLs(r.Loaded.Settings(), runtime.GOARCH)
}

// HostFacts reads the host facts. store is the OS keychain (nil skips the
// keychain probes).
func (s *Service) HostFacts(ctx context.Context, store secret.Store, opt HostFactsOptions) HostFacts {
	f := HostFacts{GOOS: runtime.GOOS, Arch: runtime.GOARCH, UID: os.Getuid(), LimaHome: s.Layout.LimaHome(), LimaInstall: lima.ThisInstall()}
	f.LimaVersion, f.LimaErr = s.Lima.CheckVersion(ctx)
	if filepath.IsAbs(s.Lima.Limactl) {
		f.LimactlPath = s.Lima.Limactl
	}
	f.GitCLIs = map[string]string{}
	for _, name := range []string{"gh", "glab"} {
		f.GitCLIs[name], _ = hostbin.Find(name)
	}
	if errors.Is(f.LimaErr, lima.ErrTooOld) {
		f.LimaErr = nil // HostChecks says so with the version
	}
	switch runtime.GOOS {
	case "linux":
		f.QemuPath, f.QemuErr = qemu.FindQemu("")
		f.QemuImgPath, f.QemuImgErr = hostbin.Find("qemu-img")
		f.KVM, f.KVMReason = qemu.KVMUsable()
		f.UserNS = qemu.CheckNamespaces()
	case "darwin":
		f.VZ, f.VZDetail = vzAvailable()
		f.QemuPath, f.QemuErr = qemu.FindQemu("")
		f.QemuImgPath, f.QemuImgErr = hostbin.Find("qemu-img")
		if f.QemuErr == nil {
			f.QemuFirmware = qemu.FirmwareDir(f.QemuPath)
		}
	}
	for _, d := range s.Layout.Dirs() {
		df := DirFact{Path: d}
		fi, err := os.Stat(d)
		if err != nil {
			df.Err = err
		} else {
			df.Mode = fi.Mode().Perm()
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				df.UID = int(st.Uid)
			}
		}
		f.Dirs = append(f.Dirs, df)
	}
	f.MaxNameLen = project.MaxNameLen(s.Layout.LimaHome())
	metas, _ := boxmeta.List(s.Layout)
	users := map[config.SecretRef][]string{}
	for _, m := range metas {
		f.BoxNames = append(f.BoxNames, m.Name)
		if m.GitShadowOff {
			f.GitShadowOff = append(f.GitShadowOff, m.Name)
		}
		r, err := boxmeta.Resolve(s.Layout, boxmeta.ResolveOptions{Dir: m.Project})
		if err != nil {
			continue
		}
		c := r.Loaded.Settings()
		if len(c.KeychainEnv) > 0 {
			f.KeychainUsers = append(f.KeychainUsers, m.Name)
		}
		if c.VMType == config.VMTypeQEMU {
			f.QemuUsers = append(f.QemuUsers, m.Name)
		}
		for _, ref := range keychainRefs(c) {
			users[ref] = append(users[ref], m.Name)
		}
	}
	if p, ok := store.(secret.Prober); ok {
		for _, ref := range slices.SortedFunc(maps.Keys(users), func(a, b config.SecretRef) int {
			return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Account, b.Account))
		}) {
			it := KeychainItem{Boxes: users[ref], Service: ref.Service, Account: ref.Account}
			it.Access, it.Err = p.Probe(ctx, ref.Service, ref.Account)
			f.KeychainItems = append(f.KeychainItems, it)
		}
	}
	if opt.ImagesFor != "" {
		f.Images = ProbeImages(ctx, nil, s.imagesFor(opt.ImagesFor))
		if f.Images == nil {
			f.Images = []ImageProbe{} // a local image: nothing to fetch
		}
	}
	if h, err := hostinfo.Read(); err == nil {
		f.HostMemory = h.MemoryBytes
	}
	f.Running, _ = s.List()
	if ib, err := s.IdleBoxes(); err == nil {
		for _, st := range ib {
			f.Idle = append(f.Idle, st.Name)
		}
	}
	if store != nil {
		_, f.Keychain = store.Get(ctx, doctorProbeService, "probe")
	}
	return f
}

//go:embed doctor_guest.sh
var doctorGuestScript string

// GuestRunner runs the doctor's guest script: argv is the ssh command,
// environ its extra environment (CORRAL_FWD_ entries), script its stdin.
type GuestRunner func(ctx context.Context, argv, environ []string, script string) ([]byte, error)

// DoctorBoxOptions describe what a box's sessions get, so that doctor can
// check that it arrives.
type DoctorBoxOptions struct {
	// Resolved is the box's project and effective config.
	Resolved boxmeta.Resolved
	// Host is what a session of the caller's would take from the host
	// (SessionHost): DoctorBox assembles the box's session environment
	// from it as a session does (DoctorEnv), checks that its variables
	// arrive, and reports its refusal one check per config key.
	Host SessionHost
	// RunGuest runs the guest script; nil runs ssh.
	RunGuest GuestRunner
}

// guestTimeout bounds the doctor's ssh round trip.
const guestTimeout = time.Minute

// DoctorBox checks one box: its state, its broker, and, over one ssh round
// trip, the guest (provisioning, units, network mode, the session
// environment and git credentials).
func (s *Service) DoctorBox(ctx context.Context, box string, opt DoctorBoxOptions) []Check {
	m, err := boxmeta.Read(s.Layout, box)
	if err != nil {
		return []Check{fail("box "+box, err.Error(), hint.Or(err, "corral ls lists the boxes"))}
	}
	var out []Check
	st := s.StatusOf(m)
	switch st.State {
	case boxstate.Running:
		out = append(out, pass("box "+box, "running"))
	case boxstate.Stopped:
		out = append(out, pass("box "+box, "stopped; the guest checks need it running (corral start "+box+")"))
	case boxstate.Missing:
		return append(out, fail("box "+box, "the Lima instance is gone", "corral rm "+box+" && corral up -C "+m.Project))
	default:
		return append(out, fail("box "+box, strings.ToLower(string(st.State)), "corral stop "+box+" && corral start "+box))
	}

	// Without the resolved project (its config did not load) there is no
	// session environment to check; the caller reports why.
	var env launchenv.Env
	if opt.Resolved.Project.Box == box {
		var envErr error
		env, envErr = s.DoctorEnv(ctx, opt.Resolved, opt.Resolved.Loaded.Settings().Agent, opt.Host)
		if rendered, err := Render(s.Layout, opt.Resolved, m.BrokerPort, false); err == nil && rendered.Hash != m.TemplateHash {
			out = append(out, fail("config", "the box's config changed since it was created", "corral rebuild -C "+m.Project))
		} else if err == nil {
			out = append(out, pass("config", "the box matches its config"))
		}
		out = append(out, envChecks(envErr)...)
	}

	out = append(out, agentStateCheck(m, opt.Resolved))
	out = append(out, s.gitGuardCheck(m), nestedCheck(m))

	if st.State != boxstate.Running {
		return out
	}
	if m.Network == config.NetworkBroker {
		if BrokerAnswering(m.BrokerPort) {
			out = append(out, pass("broker", fmt.Sprintf("answering on 127.0.0.1:%d", m.BrokerPort)))
		} else {
			out = append(out, fail("broker", fmt.Sprintf("not answering on 127.0.0.1:%d (log: %s)", m.BrokerPort, s.Layout.BrokerLog(box)),
				"corral stop "+box+" && corral start "+box))
		}
	}

	if drift := s.GitlinkDrift(m); len(drift) > 0 {
		out = append(out, fail("submodule paths", "not protected by the running box: "+strings.Join(drift, "; "), "corral stop "+box+" && corral up -C "+m.Project))
	}
	if funnel.Applies(runtime.GOOS, m.VMType, m.Network) {
		if err := funnel.Verify(s.Layout.LimaHome(), box, funnel.Want{VMType: m.VMType, Network: m.Network, BrokerPort: m.BrokerPort, HostPorts: m.HostPorts}); err != nil {
			out = append(out, fail("host funnel", err.Error(), "corral stop "+box+" && corral up -C "+m.Project))
		} else {
			out = append(out, pass("host funnel", "the running qemu has restrict=on and only the broker's guestfwd"))
		}
	}

	out = append(out, nameRuleCheck(s.Layout.LimaHome(), m))
	want := guestWant{Box: box, Network: m.Network, Units: guest.Units, EnvNames: env.Names(), User: limayaml.GuestUser(limaUser())}
	if opt.Resolved.Project.Box == box {
		want.GitHosts = opt.Resolved.Loaded.Settings().GitTokens
	}
	argv, err := s.Lima.SSHArgs(box, lima.SSHOptions{SendEnv: []string{SendEnvPattern}, NoMultiplex: true})
	if err != nil {
		return append(out, fail("ssh", err.Error(), ""))
	}
	argv = append(argv, "-o", "LogLevel=ERROR", "-T", "--", want.remoteCommand())
	run := opt.RunGuest
	if run == nil {
		run = runSSH
	}
	ctx, cancel := context.WithTimeout(ctx, guestTimeout)
	defer cancel()
	b, err := run(ctx, argv, env.SSHEnviron(), doctorGuestScript)
	kv := parseGuestReport(b)
	if kv["end"] != "1" {
		detail := "no answer from the guest"
		if err != nil {
			detail = err.Error()
		}
		return append(out, fail("ssh", detail, "corral stop "+box+" && corral start "+box))
	}
	return append(out, guestChecks(want, kv)...)
}

func runSSH(ctx context.Context, argv, environ []string, script string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), environ...)
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, firstLine(msg))
		}
		return out, fmt.Errorf("running the doctor's checks over ssh: %w", err)
	}
	return out, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// envChecks reports Assemble's refusal one check per config key.
func envChecks(err error) []Check {
	if err == nil {
		return []Check{pass("session environment", "every configured variable has a source")}
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	var out []Check
	for _, e := range errs {
		var le *launchenv.Error
		if errors.As(e, &le) {
			out = append(out, fail(le.Key, le.Err.Error(), le.Hint()))
		} else {
			out = append(out, fail("session environment", e.Error(), hint.Or(e, "")))
		}
	}
	return out
}

// guestWant is what the guest must show.
type guestWant struct {
	Box      string
	Network  config.Network
	Units    []string
	EnvNames []string
	GitHosts []string
	// User is the guest user the box's template names
	// (limayaml.GuestUser of the host user): sessions must run as it.
	User string
}

// remoteCommand is the command line ssh hands the guest's shell: the
// script comes on stdin; every argument is quoted.
func (w guestWant) remoteCommand() string {
	args := []string{"sh", "-s", "--", shellQuote(string(w.Network))}
	for _, u := range w.Units {
		args = append(args, shellQuote("unit:"+u))
	}
	for _, n := range w.EnvNames {
		args = append(args, shellQuote("env:"+n))
	}
	for _, h := range w.GitHosts {
		args = append(args, shellQuote("git:"+h+":"+launchenv.TokenVar(h)))
	}
	return strings.Join(args, " ")
}

// parseGuestReport reads the script's key=value lines; later lines win.
func parseGuestReport(b []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && k != "" {
			kv[k] = v
		}
	}
	return kv
}

// stepsCheck is the guest's own record of this boot's provision steps
// (step.NAME=STATUS in the report, golden.CheckProvision's rule): Lima
// reports a box ready even when a step failed.
func stepsCheck(kv map[string]string) Check {
	const name = "provision steps"
	if kv["steps"] != "1" {
		return pass(name, "no record in the box (made before corral recorded its provision steps; corral rebuild makes one)")
	}
	var rec strings.Builder
	for k, v := range kv {
		if step, ok := strings.CutPrefix(k, "step."); ok {
			fmt.Fprintf(&rec, "%s %s\n", step, v)
		}
	}
	steps := golden.ProvisionSteps()
	if err := golden.CheckProvision([]byte(rec.String()), steps); err != nil {
		return fail(name, err.Error()+" at this boot",
			"its output is in the box's console log (serial.log, serialv.log on vz, in ~/.corral/lima/BOX); fix the cause, then corral rebuild")
	}
	return pass(name, fmt.Sprintf("all %d succeeded at this boot", len(steps)))
}

// guestChecks turns the guest's report into checks. It is pure.
func guestChecks(w guestWant, kv map[string]string) []Check {
	var out []Check
	box := w.Box
	restart := "corral stop " + box + " && corral start " + box + " (provisioning runs again at boot)"
	if kv["marker"] == "1" {
		out = append(out, pass("provisioned", guest.ProvisionedMarker+" present"))
	} else {
		out = append(out, fail("provisioned", guest.ProvisionedMarker+" is missing: provisioning did not finish",
			"corral rebuild (the boot log is the box's console log: serial.log, serialv.log on vz)"))
	}
	out = append(out, stepsCheck(kv))
	for _, u := range w.Units {
		state := kv["unit."+u]
		if state == "active" {
			out = append(out, pass("unit "+u, "active"))
			continue
		}
		if state == "" {
			state = "unknown"
		}
		out = append(out, fail("unit "+u, u+" is "+state+" in the box; sessions are refused",
			restart+"; journalctl -u "+u+" in the box shows why"))
	}

	if got := kv["user"]; w.User != "" && got != "" {
		if got == w.User {
			out = append(out, pass("guest user", got+", the user the template names"))
		} else {
			out = append(out, fail("guest user", fmt.Sprintf("sessions run as %q, but the template names %q: provisioning gave that user the project, the agent's state and the sudo rules", got, w.User),
				"corral rebuild; if it persists, Lima's rule for the guest user changed (core/limayaml GuestUser)"))
		}
	}

	netName := "network " + string(w.Network)
	var netProblems []string
	if got := kv["network"]; got != string(w.Network) {
		netProblems = append(netProblems, fmt.Sprintf("the guest applies network %q, the box was created with %q", got, w.Network))
	}
	nftNote := ""
	if w.Network == config.NetworkBroker || w.Network == config.NetworkOffline {
		if kv["sudo"] != "no" {
			netProblems = append(netProblems, "the box user has sudo, so it could undo the network rules")
		}
		switch kv["nft"] {
		case "present":
			nftNote = "; nftables table inet corral present"
		case "unknown":
			nftNote = "; nftables table not readable without root (its unit is checked above)"
		default:
			netProblems = append(netProblems, "the nftables table inet corral is missing")
		}
	}
	if len(netProblems) > 0 {
		out = append(out, fail(netName, strings.Join(netProblems, "; "), "corral rebuild"))
	} else {
		out = append(out, pass(netName, "applied"+nftNote))
	}

	var missing []string
	for _, n := range w.EnvNames {
		if kv["env."+n] != "1" {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		out = append(out, fail("session variables", "not arriving in the box: "+strings.Join(missing, ", "),
			"the box's sshd must accept CORRAL_FWD_*: "+restart))
	} else {
		out = append(out, pass("session variables", fmt.Sprintf("%d arrive in the box", len(w.EnvNames))))
	}

	for _, h := range w.GitHosts {
		name := "git credentials " + h
		switch kv["git."+h] {
		case "ok":
			out = append(out, pass(name, "the credential helper answers"))
		case "nogit":
			out = append(out, pass(name, "git is not installed in the box"))
		default:
			out = append(out, fail(name, "the credential helper gives no token for https://"+h,
				fmt.Sprintf("corral secret set --service %s --account %s (or gh auth login on the host)", launchenv.GitTokenService, h)))
		}
	}
	return out
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return true
		}
	}
	return false
}

// agentStateCheck states where the box's agent state lives; shared state
// fails the check, with its risk (see core/agentstate).
func agentStateCheck(m boxmeta.Meta, r boxmeta.Resolved) Check {
	const name = "agent state"
	mode := m.AgentState
	if r.Project.Box == m.Name {
		mode = r.Loaded.Settings().AgentState
	}
	switch mode {
	case agentstate.Seeded:
		return pass(name, "per box, seeded from the host-owned template (never mounted into a box)")
	case agentstate.Isolated:
		return pass(name, "per box, started empty")
	case agentstate.Shared:
		return fail(name, agentstate.SharedRisk,
			`set agent_state = "seeded" in ~/.corral/config.toml, then corral rebuild -C `+m.Project+` (keep "shared" only if every box using it is trusted)`)
	}
	return fail(name, "box created before per-box agent state: it may mount the shared agent directory",
		"corral rebuild -C "+m.Project)
}

// nameRuleCheck says whether the host refuses a .git in the running box's
// work tree (core/namerule: Linux qemu, unless git_shadow = false) and
// proves it from the running qemu; elsewhere it says what reports them.
func nameRuleCheck(limaHome string, m boxmeta.Meta) Check {
	switch {
	case m.Project == "" || m.Source == config.SourceClone:
		return pass("name rule", "no shared project")
	case runtime.GOOS != "linux" || m.VMType != config.VMTypeQEMU || m.GitShadowOff:
		if m.Network == config.NetworkBroker {
			return pass("name rule", "not enforced by this host (vz or git_shadow = false): the broker reports a .git made in the work tree within 2 s")
		}
		return pass("name rule", "not enforced by this host (vz or git_shadow = false): a .git made in the work tree is reported at stop, pull and doctor")
	}
	pid, err := untrusted.ReadPID(funnel.PIDFile(limaHome, m.Name))
	if err != nil {
		return fail("name rule", "cannot read qemu's pid: "+err.Error(), "corral stop "+m.Name+" && corral start "+m.Name)
	}
	sup, err := namerule.Verify(pid)
	if err != nil {
		return fail("name rule", err.Error(), "corral stop "+m.Name+" && corral start "+m.Name)
	}
	return pass("name rule", fmt.Sprintf("qemu (pid %d) cannot make a .git in the work tree; its supervisor is pid %d", pid, sup))
}
