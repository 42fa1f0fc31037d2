package lima

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/version"
)

// TestDetectInstall: macOS is Homebrew (the cask), /usr/bin/corral with
// dpkg's record is the Debian package, anything else the source tree.
func TestDetectInstall(t *testing.T) {
	dpkg := func(p string) bool { return p == DebianRecord }
	none := func(string) bool { return false }
	for _, c := range []struct {
		goos, exe string
		exists    func(string) bool
		want      Install
	}{
		{"darwin", "/opt/homebrew/bin/corral", none, InstallHomebrew},
		{"darwin", "/Users/me/src/corral/bin/corral", none, InstallHomebrew},
		{"linux", "/usr/bin/corral", dpkg, InstallDebian},
		{"linux", "/usr/bin/corral", none, InstallSource},                // copied there by hand
		{"linux", "/usr/local/bin/corral", dpkg, InstallSource},          // make install beside a package
		{"linux", "/home/me/src/corral/bin/corral", none, InstallSource}, // a build
	} {
		if got := DetectInstall(c.goos, c.exe, c.exists); got != c.want {
			t.Errorf("DetectInstall(%s, %s) = %s, want %s", c.goos, c.exe, got, c.want)
		}
	}
}

// TestInstallHint: one case per way to install, each naming that way and
// the version corral is tested with (and the oldest it supports).
func TestInstallHint(t *testing.T) {
	for _, c := range []struct {
		how    Install
		goarch string
		tooOld bool
		want   string
	}{
		{InstallHomebrew, "arm64", false, "install Lima with Homebrew: brew install lima (corral is tested with Lima 2.2.0, what Homebrew ships; 1.2.2 is the oldest it supports)"},
		{InstallHomebrew, "arm64", true, "upgrade Lima with Homebrew: brew upgrade lima (corral is tested with Lima 2.2.0, what Homebrew ships; 1.2.2 is the oldest it supports)"},
		{InstallDebian, "amd64", false, "Lima is not packaged in Debian 12; install its release 2.2.0 (what corral is tested with; 1.2.2 is the oldest it supports) into /usr/local: curl -fsSL https://github.com/lima-vm/lima/releases/download/v2.2.0/lima-2.2.0-Linux-x86_64.tar.gz | sudo tar -C /usr/local -xz"},
		{InstallDebian, "arm64", true, "Lima is not packaged in Debian 12; install its release 2.2.0 (what corral is tested with; 1.2.2 is the oldest it supports) into /usr/local: curl -fsSL https://github.com/lima-vm/lima/releases/download/v2.2.0/lima-2.2.0-Linux-aarch64.tar.gz | sudo tar -C /usr/local -xz"},
		{InstallSource, "amd64", false, "install Lima from corral's source tree: sudo packaging/linux/setup-lima.sh (Lima 1.2.2, the oldest corral supports; corral is tested with 2.2.0 and 1.2.2)"},
	} {
		if got := InstallHint(c.how, c.goarch, c.tooOld); got != c.want {
			t.Errorf("InstallHint(%s, %s, %v) =\n  %s\nwant\n  %s", c.how, c.goarch, c.tooOld, got, c.want)
		}
	}
}

// TestInstallHintVersions: the versions named are the ones the suite runs.
func TestInstallHintVersions(t *testing.T) {
	if !slices.Equal(version.LimaTestedVersions, []string{TestedVersion, PinnedVersion}) {
		t.Fatalf("core/version LimaTestedVersions %v, core/lima names %s and %s", version.LimaTestedVersions, TestedVersion, PinnedVersion)
	}
}

// TestLimaErrorHintIsTheInstallHint: a missing or old limactl carries the
// install hint of this corral's way to install.
func TestLimaErrorHintIsTheInstallHint(t *testing.T) {
	for _, sentinel := range []error{ErrNotInstalled, ErrTooOld} {
		h := hintFor(fmt.Errorf("x: %w", sentinel))
		if !strings.Contains(h, "Lima") || !strings.Contains(h, TestedVersion) {
			t.Errorf("%v: hint %q", sentinel, h)
		}
		if errors.Is(sentinel, ErrTooOld) && ThisInstall() == InstallHomebrew && !strings.Contains(h, "upgrade") {
			t.Errorf("too old on Homebrew: %q", h)
		}
	}
}
