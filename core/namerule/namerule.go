// Package namerule is the work tree's name rule, enforced by the host for a
// qemu box on Linux: no entry whose name git would take for .git (any case,
// HFS+ ignorable code points, NTFS short names and trailing dots or spaces:
// core/dotgit) can be created anywhere under the project qemu exports, and
// nothing inside an existing one can be changed, moved out or linked out.
// The rule names no path of the tree, so a rename of any ancestor cannot
// undo it, and it holds for every project: a repository's top, a monorepo
// subdirectory, no git at all.
//
// The mechanism is seccomp user notification on qemu's creating and
// changing system calls (open for writing, mkdir, mknod, symlink, link,
// rename, unlink, chmod, chown, truncate, the xattr calls): the qemu
// wrapper's stage starts a supervisor (this binary, `corral
// qemu-name-rule`), installs the filter on the thread that then execs qemu,
// and hands the filter's listener to the supervisor, which is not in the
// VM's reach. For each trapped call the supervisor reads the path from
// qemu's memory, resolves the directory the kernel would use from qemu's
// descriptor table (/proc/PID/fd), and answers EPERM when the entry lies in
// the project and any component below the project's top is a .git name;
// otherwise the kernel carries the call out as asked. A supervisor that
// dies leaves every trapped call failing (ENOSYS): the rule fails closed.
//
// Why answering "continue" is sound here: the guest cannot write qemu's
// heap, where 9p keeps the name it copied from the guest's request, so the
// kernel's second reading of the path is the one checked; and the set of
// entries inside a .git can only grow by a call whose destination is inside
// one, which is refused, so no concurrent rename can move a checked
// directory into a .git between the check and the call. Calls that could
// break that argument (a path of several components into the project, an
// absolute path into it, following a symbolic link there) are refused: the
// 9p server never makes them. A qemu compromised by the guest is outside
// this boundary, as it is outside every other.
package namerule

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/core/dotgit"
)

// Command is the argument that starts the supervisor mode of the corral
// binary (cmd/corral/main.go dispatches it before the CLI).
const Command = "qemu-name-rule"

// Rule is what the supervisor enforces for one qemu.
type Rule struct {
	Box string
	// Roots are the exported directories (the project), clean absolute
	// paths with no symbolic link in them, as qemu's namespace sees them.
	Roots []string
	// Exempt are mount IDs (as statx's STATX_MNT_ID and mountinfo give
	// them) of the box's private directories mounted over empty submodule
	// paths: what the VM writes there never reaches the host's work tree,
	// so a submodule's .git may be made in them. An ID, not a path, so a
	// rename of the mount's parent changes nothing.
	Exempt []uint64
}

// Refuses reports whether a change to the entry at full (a clean absolute
// path, its directory resolved by the kernel) breaks the rule: it lies
// under a root and a component below the root is a .git name, or the entry
// itself is named HEAD (git takes a directory holding HEAD, objects/ and
// refs/ for a bare repository and obeys its config when run inside it,
// unless safe.bareRepository = explicit: without HEAD the box cannot make
// one). at is the path up to that component.
func (r Rule) Refuses(full string) (at string, refused bool) {
	root, ok := r.under(full)
	if !ok {
		return "", false
	}
	rest := strings.TrimPrefix(full[len(root):], "/")
	at = root
	for _, comp := range strings.Split(rest, "/") {
		if comp == "" {
			continue
		}
		at = filepath.Join(at, comp)
		if dotgit.Is(comp) {
			return at, true
		}
	}
	if filepath.Base(full) == BareHead && full != root {
		return full, true
	}
	return "", false
}

// BareHead is the one file every git directory has; the box may not make
// an entry by that name in the work tree (see Refuses).
const BareHead = "HEAD"

// Under reports whether full is a root or lies below one.
func (r Rule) Under(full string) bool {
	_, ok := r.under(full)
	return ok
}

func (r Rule) under(full string) (string, bool) {
	for _, root := range r.Roots {
		if full == root || strings.HasPrefix(full, root+"/") || root == "/" {
			return root, true
		}
	}
	return "", false
}

func (r Rule) exempt(mnt uint64) bool {
	for _, e := range r.Exempt {
		if e == mnt {
			return true
		}
	}
	return false
}

// Args is the supervisor's command line after Command.
func (r Rule) Args() []string {
	out := []string{"--box", r.Box}
	for _, root := range r.Roots {
		out = append(out, "--root", root)
	}
	for _, id := range r.Exempt {
		out = append(out, "--exempt", strconv.FormatUint(id, 10))
	}
	return out
}

// ParseArgs reads Args back. Roots must be clean absolute paths.
func ParseArgs(args []string) (Rule, error) {
	var r Rule
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return Rule{}, fmt.Errorf("%s: %s needs a value", Command, args[i])
		}
		v := args[i+1]
		switch args[i] {
		case "--box":
			r.Box = v
		case "--root":
			if !filepath.IsAbs(v) || filepath.Clean(v) != v {
				return Rule{}, fmt.Errorf("%s: root %q is not a clean absolute path", Command, v)
			}
			r.Roots = append(r.Roots, v)
		case "--exempt":
			id, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return Rule{}, fmt.Errorf("%s: exempt mount %q: %w", Command, v, err)
			}
			r.Exempt = append(r.Exempt, id)
		default:
			return Rule{}, fmt.Errorf("%s: unknown argument %q", Command, args[i])
		}
	}
	if len(r.Roots) == 0 {
		return Rule{}, fmt.Errorf("%s: no --root", Command)
	}
	return r, nil
}
