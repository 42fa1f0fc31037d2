package qemu

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/corral-dev/corral/core/hostbin"
)

// ErrQemuNotFound means no real qemu-system binary was found.
var ErrQemuNotFound = errors.New("qemu-system binary not found")

// fallbackDirs are searched after PATH: the one list of package-manager prefixes.
var fallbackDirs = hostbin.Dirs

// FindQemu returns the absolute path of the real qemu-system binary for arch ("x86_64", "amd64", "aarch64",
// "arm64"; "" means the host's). It never returns corral itself: corral is the QEMU_SYSTEM_<ARCH> wrapper and
// may be on PATH under the same name, and a wrapper that execs itself loops forever.
func FindQemu(arch string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding qemu: locating own executable: %w", err)
	}
	return findQemu(arch, os.Getenv("PATH"), self, fallbackDirs)
}

// QemuArch maps Go and Lima arch names to qemu's.
func QemuArch(arch string) (string, error) {
	if arch == "" {
		arch = runtime.GOARCH
	}
	switch arch {
	case "x86_64", "amd64":
		return "x86_64", nil
	case "aarch64", "arm64":
		return "aarch64", nil
	}
	return "", fmt.Errorf("qemu arch for %q: unsupported", arch)
}

func findQemu(arch, pathEnv, self string, fallback []string) (string, error) {
	qa, err := QemuArch(arch)
	if err != nil {
		return "", fmt.Errorf("finding qemu: %w", err)
	}
	name := "qemu-system-" + qa
	selfInfo, _ := os.Stat(self) // nil if self is gone: then nothing is skipped as "self"
	isSelf := func(_ string, fi fs.FileInfo) bool { return selfInfo != nil && os.SameFile(fi, selfInfo) }
	p, err := hostbin.Lookup(name, pathEnv, fallback, isSelf)
	if err != nil {
		return "", fmt.Errorf("finding %s: %w in PATH or %s (install it: apt-get install qemu-system-x86 / brew install qemu)",
			name, ErrQemuNotFound, strings.Join(fallback, ", "))
	}
	return p, nil
}

// FirmwareDir is the share/qemu directory that belongs to the real qemu at
// qemuPath, or "" when there is none. Lima looks for UEFI firmware in
// dir(dir(qemu))/share/qemu (pkg/driver/qemu getFirmware, 1.2 and 2.2),
// and with corral's shim that is ~/.corral/run/share/qemu: the lifecycle
// service links it here. Homebrew's bin/qemu-system-* is a link into the
// Cellar, and both prefixes have share/qemu; the link's own prefix is
// tried first, then the resolved one.
func FirmwareDir(qemuPath string) string {
	cands := []string{qemuPath}
	if r, err := filepath.EvalSymlinks(qemuPath); err == nil && r != qemuPath {
		cands = append(cands, r)
	}
	for _, p := range cands {
		d := filepath.Join(filepath.Dir(filepath.Dir(p)), "share", "qemu")
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d
		}
	}
	return ""
}
