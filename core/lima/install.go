package lima

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

// TestedVersion is the Lima release corral's whole end-to-end suite runs
// on, and the one Homebrew installs; PinnedVersion (the oldest supported)
// gets a smoke run (core/version LimaTestedVersions lists both).
const TestedVersion = "2.2.0"

// Install is how corral itself was installed, which decides how the user
// should install Lima: the hint names their way, not the source tree's.
type Install string

const (
	// InstallHomebrew: macOS, where the cask installs corral and pulls
	// Lima's formula (packaging/homebrew).
	InstallHomebrew Install = "homebrew"
	// InstallDebian: corral from its Debian package (packaging/deb). Lima
	// is not in Debian 12, so the package cannot depend on it.
	InstallDebian Install = "debian"
	// InstallSource: anything else, a build from corral's source tree.
	InstallSource Install = "source"
)

// DebianRecord is the file dpkg keeps for an installed corral package.
const DebianRecord = "/var/lib/dpkg/info/corral.list"

// DetectInstall says how corral was installed from the OS, the path of
// the running corral (symlinks resolved) and whether dpkg has a record of
// the corral package (exists reports whether a file is there). Pure: the
// caller supplies the facts.
func DetectInstall(goos, exe string, exists func(string) bool) Install {
	if goos == "darwin" {
		return InstallHomebrew
	}
	if exe == "/usr/bin/corral" && exists(DebianRecord) {
		return InstallDebian
	}
	return InstallSource
}

// ThisInstall is DetectInstall for the running corral, found once.
var ThisInstall = sync.OnceValue(func() Install {
	exe, err := os.Executable()
	if err == nil {
		if p, err := filepath.EvalSymlinks(exe); err == nil {
			exe = p
		}
	}
	return DetectInstall(runtime.GOOS, exe, func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	})
})

// InstallHint is the one line that tells the user how to install Lima
// (upgrade, when tooOld) their way, naming the version corral is tested
// with. goarch is Go's name of the host's architecture (the Debian hint
// names Lima's release tarball for it). Pure.
func InstallHint(how Install, goarch string, tooOld bool) string {
	switch how {
	case InstallHomebrew:
		verb := "install Lima with Homebrew: brew install lima"
		if tooOld {
			verb = "upgrade Lima with Homebrew: brew upgrade lima"
		}
		return verb + " (corral is tested with Lima " + TestedVersion + ", what Homebrew ships; " + PinnedVersion + " is the oldest it supports)"
	case InstallDebian:
		arch := map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[goarch]
		if arch == "" {
			arch = "$(uname -m)"
		}
		return "Lima is not packaged in Debian 12; install its release " + TestedVersion + " (what corral is tested with; " + PinnedVersion + " is the oldest it supports) into /usr/local: " +
			"curl -fsSL https://github.com/lima-vm/lima/releases/download/v" + TestedVersion + "/lima-" + TestedVersion + "-Linux-" + arch + ".tar.gz | sudo tar -C /usr/local -xz"
	default:
		return "install Lima from corral's source tree: sudo packaging/linux/setup-lima.sh (Lima " + PinnedVersion +
			", the oldest corral supports; corral is tested with " + TestedVersion + " and " + PinnedVersion + ")"
	}
}
