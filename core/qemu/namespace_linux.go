package qemu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// userNamespace names the user namespace of this process (device:inode).
func userNamespace() (string, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &st); err != nil {
		return "", fmt.Errorf("reading this process's user namespace: %w", err)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// findUnshare locates util-linux unshare.
func findUnshare() (string, error) {
	p, err := exec.LookPath("unshare")
	if err != nil {
		for _, c := range []string{"/usr/bin/unshare", "/bin/unshare"} {
			if _, err := os.Stat(c); err == nil {
				return c, nil
			}
		}
		return "", fmt.Errorf("%w: unshare (util-linux) not found", ErrNoUserNamespace)
	}
	return p, nil
}

// EnterNamespace execs self (the wrapper's own argv, argv[0] absolute) again
// through unshare(1) in a private user and mount namespace, with StageEnv
// set. It returns only on failure.
func EnterNamespace(self []string, env []string) error {
	unshare, err := findUnshare()
	if err != nil {
		return err
	}
	ns, err := userNamespace()
	if err != nil {
		return err
	}
	if !filepath.IsAbs(self[0]) {
		p, err := exec.LookPath(self[0])
		if err != nil {
			return fmt.Errorf("locating %s: %w", self[0], err)
		}
		self = append([]string{p}, self[1:]...)
	}
	env = append(withoutVar(env, StageEnv), StageEnv+"="+ns)
	err = syscall.Exec(unshare, unshareArgs(unshare, self), env)
	return fmt.Errorf("exec %s: %w", unshare, err)
}

// InStage reports whether this run is the stage EnterNamespace started. It
// fails when the marker is set but the process is still in the namespace
// the marker names: then no unshare happened.
func InStage() (bool, error) {
	want, ok := os.LookupEnv(StageEnv)
	if !ok {
		return false, nil
	}
	ns, err := userNamespace()
	if err != nil {
		return false, err
	}
	if want == "" || ns == want {
		return false, fmt.Errorf("%s is set but this process is not in a new user namespace", StageEnv)
	}
	return true, nil
}

// BindReadOnly binds each path read-only over itself in this process's
// mount namespace (the stage's private one) and verifies the result from
// /proc/self/mountinfo. Bind mounts follow symlinks: pass resolved paths.
func BindReadOnly(paths []string) error {
	for _, p := range paths {
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s over itself: %w", p, err)
		}
		if err := remountReadOnly(p); err != nil {
			return err
		}
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	return checkReadOnly(parseMountinfo(string(b)), paths)
}

// remountReadOnly makes the bind mount at p read-only. A remount inside a
// user namespace must keep the flags the mount was locked with (nosuid,
// nodev, …), or the kernel says EPERM.
func remountReadOnly(p string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(p, &st); err != nil {
		return fmt.Errorf("reading the mount flags of %s: %w", p, err)
	}
	flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY)
	for _, f := range []struct{ st, ms uintptr }{
		{unix.ST_NOSUID, unix.MS_NOSUID}, {unix.ST_NODEV, unix.MS_NODEV}, {unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_NOATIME, unix.MS_NOATIME}, {unix.ST_NODIRATIME, unix.MS_NODIRATIME}, {unix.ST_RELATIME, unix.MS_RELATIME},
	} {
		if uintptr(st.Flags)&f.st != 0 {
			flags |= f.ms
		}
	}
	if err := unix.Mount("", p, "", flags, ""); err != nil {
		return fmt.Errorf("making %s read-only: %w", p, err)
	}
	return nil
}

// MountPrivate mounts each Source over its Target in this process's mount
// namespace (the stage's private one), read-write: the VM then writes the
// box's own directory, and the host's work tree keeps what was there. A
// missing Target is created (an empty directory, as git leaves an
// uninitialized submodule); a Target that is a symbolic link or not a
// directory is refused, and the mount goes through an O_PATH|O_NOFOLLOW
// descriptor so no link swapped in is followed.
func MountPrivate(mounts []PrivateMount) error {
	for _, m := range mounts {
		if err := mountPrivate(m); err != nil {
			return err
		}
	}
	if len(mounts) == 0 {
		return nil
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("reading /proc/self/mountinfo: %w", err)
	}
	points := MountPoints(string(b))
	for _, m := range mounts {
		ro, ok := points[m.Target]
		if !ok {
			return fmt.Errorf("%s is not a mount point after mounting over it", m.Target)
		}
		if m.Kind == PrivateHidden && !ro {
			return fmt.Errorf("%s is not read-only after hiding it", m.Target)
		}
	}
	return nil
}

func mountPrivate(m PrivateMount) error {
	flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
	switch m.Kind {
	case PrivateBoxDir:
		if err := os.MkdirAll(m.Source, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", m.Source, err)
		}
		if _, err := os.Lstat(m.Target); os.IsNotExist(err) {
			if err := os.MkdirAll(m.Target, 0o755); err != nil {
				return fmt.Errorf("creating the submodule path %s: %w", m.Target, err)
			}
		}
		flags |= unix.O_DIRECTORY
	case PrivateHidden:
	default:
		return fmt.Errorf("mount over %s: unknown kind %d", m.Target, m.Kind)
	}
	fd, err := unix.Open(m.Target, flags, 0)
	if err != nil {
		return fmt.Errorf("%s is not a plain directory or file: %w", m.Target, err)
	}
	defer unix.Close(fd)
	if m.Kind == PrivateHidden {
		// The type checked on the descriptor that is mounted over, after
		// O_NOFOLLOW: a symbolic link the box put there since the plan
		// fails here (ELOOP above, or the type below).
		var st, src unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("hiding %s: %w", m.Target, err)
		}
		if err := unix.Stat(m.Source, &src); err != nil {
			return fmt.Errorf("hiding %s: %w", m.Target, err)
		}
		if st.Mode&unix.S_IFMT != src.Mode&unix.S_IFMT {
			return fmt.Errorf("hiding %s: it changed type since the plan", m.Target)
		}
	}
	at := fmt.Sprintf("/proc/self/fd/%d", fd)
	if err := unix.Mount(m.Source, at, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mounting %s over %s: %w", m.Source, m.Target, err)
	}
	if m.Kind == PrivateHidden {
		if err := remountReadOnly(m.Target); err != nil {
			return err
		}
	}
	return nil
}

// ExecWithoutCaps execs path with no capabilities: the namespace's ambient
// capabilities are cleared on the exec'ing thread (capabilities are per
// thread), so qemu, which is not uid 0 in the namespace, starts with none
// and cannot undo the read-only binds.
func ExecWithoutCaps(path string, argv, env []string) error {
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("dropping capabilities: %w", err)
	}
	err := syscall.Exec(path, argv, withoutVar(env, StageEnv))
	return fmt.Errorf("exec %s: %w", path, err)
}

// CheckNamespaces runs the same unshare command line as EnterNamespace with
// true(1) and a bind: it fails where this host cannot give qemu the
// read-only git directory (user namespaces off, util-linux too old).
func CheckNamespaces() error {
	unshare, err := findUnshare()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "corral-ns-check-")
	if err != nil {
		return fmt.Errorf("checking user namespaces: %w", err)
	}
	defer os.Remove(dir)
	args := unshareArgs(unshare, []string{"mount", "--bind", "-o", "ro", dir, dir})
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		msg := string(out)
		if len(msg) > 300 {
			msg = msg[:300]
		}
		return fmt.Errorf("%w: %s: %v %s", ErrNoUserNamespace, filepath.Base(unshare), err, msg)
	}
	return nil
}
