// Package hostbin finds the host programs corral runs (limactl, qemu,
// qemu-img, gh, glab, git) by one rule: PATH first, then the well-known
// package-manager prefixes.
//
// The prefixes matter on macOS: an app started by Finder or a login item
// gets PATH=/usr/bin:/bin:/usr/sbin:/sbin from LaunchServices, which holds
// none of Homebrew's or MacPorts' binaries. The same list extends the PATH
// corral hands to limactl, which itself looks up qemu-img, ssh and qemu.
package hostbin

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Dirs are searched after PATH, in this order: Homebrew on Apple silicon,
// Homebrew on Intel (and hand installs), MacPorts, and the system
// directory (for a PATH that lost even that).
var Dirs = []string{"/opt/homebrew/bin", "/usr/local/bin", "/opt/local/bin", "/usr/bin"}

// Skip rejects a candidate that exists and is executable; FindQemu uses it
// to pass over corral's own qemu shim.
type Skip func(path string, fi fs.FileInfo) bool

// Find returns the absolute path of name from $PATH, then Dirs. The error
// wraps exec.ErrNotFound and names every place searched.
func Find(name string) (string, error) {
	return Lookup(name, os.Getenv("PATH"), Dirs, nil)
}

// Lookup returns the absolute path of the first executable regular file
// called name in the directories of pathEnv, then in dirs, that skip (may
// be nil) does not reject. Relative PATH entries are ignored: the result
// must not depend on the working directory. A name with a slash is not
// searched: it is returned when it is executable.
func Lookup(name, pathEnv string, dirs []string, skip Skip) (string, error) {
	if strings.ContainsRune(name, '/') {
		if fi, ok := executable(name); ok && (skip == nil || !skip(name, fi)) {
			return name, nil
		}
		return "", fmt.Errorf("finding %s: %w", name, exec.ErrNotFound)
	}
	seen := map[string]bool{}
	for _, d := range searchDirs(pathEnv, dirs) {
		p := filepath.Join(d, name)
		if seen[p] {
			continue
		}
		seen[p] = true
		fi, ok := executable(p)
		if !ok || (skip != nil && skip(p, fi)) {
			continue
		}
		return p, nil
	}
	return "", fmt.Errorf("finding %s: %w in PATH or %s", name, exec.ErrNotFound, strings.Join(dirs, ", "))
}

// SearchPath is pathEnv with each of dirs that it lacks appended: the PATH
// corral gives the programs it starts, so that they find what Find finds.
func SearchPath(pathEnv string, dirs []string) string {
	return strings.Join(searchDirs(pathEnv, dirs), string(os.PathListSeparator))
}

// searchDirs lists the absolute entries of pathEnv, then those of dirs
// not already listed, each once.
func searchDirs(pathEnv string, dirs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, d := range append(filepath.SplitList(pathEnv), dirs...) {
		if d == "" || !filepath.IsAbs(d) || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	return out
}

func executable(p string) (fs.FileInfo, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return nil, false
	}
	return fi, true
}
