package qemu

import (
	"errors"
	"fmt"
	"strings"
)

// StageEnv marks the wrapper's second run, inside the private user and mount
// namespace that EnterNamespace asked unshare(1) for. Its value is the
// device:inode of the user namespace the first run was in, so a stage that
// finds itself in that same namespace (the variable was inherited or forged)
// refuses instead of running qemu unprotected.
const StageEnv = "CORRAL_QEMU_STAGE"

// ErrNoUserNamespace means this host cannot give qemu a private user and
// mount namespace, so the git directory cannot be made read-only for it.
var ErrNoUserNamespace = errors.New("unprivileged user namespaces are not available")

// unshareArgs is the unshare(1) command line that runs self in a new user
// and mount namespace, keeping the process (no fork: Lima's host agent
// waits on this PID and qemu writes it to its pid file). --map-current-user
// keeps the user's uid, so 9p reports files with their real owner;
// --keep-caps turns the namespace's capabilities into ambient ones so the
// stage (not uid 0 inside) can still mount before it drops them for qemu.
// util-linux 2.38 or later.
func unshareArgs(unshare string, self []string) []string {
	return append([]string{unshare, "--user", "--map-current-user", "--keep-caps", "--mount", "--propagation", "private", "--"}, self...)
}

// PrivateMount is something of corral's own mounted over a project path
// for qemu, in qemu's private mount namespace: the VM (its 9p server) sees
// Source, never what the host has at Target.
type PrivateMount struct {
	Source string
	Target string // absolute, inside the project
	Kind   PrivateKind
}

// PrivateKind says what a PrivateMount is for.
type PrivateKind int

const (
	// PrivateBoxDir is a directory of the box's own (under
	// ~/.corral/gitlinks/<box>, created 0700), writable: what the VM writes
	// at Target lands there (core/gitshadow: an empty submodule path, where
	// a repository the box made would be entered by the host's git). Target
	// is created if missing.
	PrivateBoxDir PrivateKind = iota
	// PrivateHidden is an empty read-only directory or file over a path the
	// config hides (hide): the VM cannot read what the host has there, even
	// as guest root. Target must exist, with Source's type, and is never
	// created; a symbolic link there is refused.
	PrivateHidden
)

// MountPoints reads /proc/PID/mountinfo (or /proc/self/mountinfo for pid
// 0) and returns each mount point with whether it is read-only (the last
// mount at a point wins).
func MountPoints(mountinfo string) map[string]bool {
	out := map[string]bool{}
	for _, m := range parseMountinfo(mountinfo) {
		out[m.point] = len(m.opts) > 0 && m.opts[0] == "ro"
	}
	return out
}

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	point string
	opts  []string // per-mount options (field 6): ro or rw first
}

// parseMountinfo reads /proc/self/mountinfo lines (proc(5)); mount points
// are octal-escaped there (\040 for a space).
func parseMountinfo(s string) []mountEntry {
	var out []mountEntry
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		out = append(out, mountEntry{point: unescapeOctal(f[4]), opts: strings.Split(f[5], ",")})
	}
	return out
}

func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }

// checkReadOnly verifies from mountinfo that each path is a mount point and
// that it and every mount below it are read-only: the last mount at a point
// is the visible one.
func checkReadOnly(mounts []mountEntry, paths []string) error {
	var errs []error
	for _, p := range paths {
		found := false
		last := map[string]bool{} // mount point -> read-only (last wins)
		for _, m := range mounts {
			if m.point == p || strings.HasPrefix(m.point, strings.TrimSuffix(p, "/")+"/") {
				last[m.point] = len(m.opts) > 0 && m.opts[0] == "ro"
				if m.point == p {
					found = true
				}
			}
		}
		if !found {
			errs = append(errs, fmt.Errorf("%s is not a mount point after binding it", p))
			continue
		}
		for point, ro := range last {
			if !ro {
				errs = append(errs, fmt.Errorf("%s is still writable", point))
			}
		}
	}
	return errors.Join(errs...)
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
