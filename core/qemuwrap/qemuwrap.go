// Package qemuwrap is the qemu wrapper mode of the corral binary: started
// under the name qemu-system-<arch> (the run/bin link the lifecycle service
// makes, ShimName), corral is the qemu Lima runs. It rewrites Lima's
// command line (core/qemu) by the box's plan (NewPlan: accelerator,
// funnel, what qemu may see read-only) and execs the real qemu.
// cmd/corral/main.go dispatches to Main before anything else.
package qemuwrap

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/corral-dev/corral/core/namerule"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/qemu"
)

// ShimName is the name under which the corral binary acts as Lima's qemu:
// the lifecycle service (core/box) links run/bin/qemu-system-<arch> to
// corral, and cmd/corral/main.go picks this mode by argv[0] (Is).
const ShimName = "qemu-system-"

// Is reports whether corral was started as Lima's qemu (through the
// run/bin/qemu-system-<arch> link the lifecycle service creates).
func Is(argv0 string) bool {
	return strings.HasPrefix(filepath.Base(argv0), ShimName)
}

// Main rewrites Lima's qemu command line and execs the real qemu:
// KVM when it is usable, TCG otherwise (nested PVM cannot boot a stock
// kernel), and for a box in broker or offline mode the host-enforced egress
// funnel (see core/funnel). It fails closed: no real qemu, a box it cannot
// identify, or an argv it cannot vouch for means no start, with the reason
// on stderr (Lima keeps it in the instance's ha.stderr.log).
func Main(argv []string) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "corral qemu: refusing to start: "+format+"\n", a...)
		return 1
	}
	arch, args := strings.TrimPrefix(filepath.Base(argv[0]), ShimName), argv[1:]
	real, err := qemu.FindQemu(arch)
	if err != nil {
		return fail("%v", err)
	}
	out, env, staged := args, os.Environ(), false
	if !qemu.IsProbe(args) {
		l, err := paths.Default()
		if err != nil {
			return fail("%v", err)
		}
		exe, err := os.Executable()
		if err == nil {
			// On macOS os.Executable is the path qemu was started by: the
			// qemu-system-* link, which would run the wrapper again.
			exe, err = filepath.EvalSymlinks(exe)
		}
		if err != nil {
			return fail("locating the corral executable: %v", err)
		}
		plan, err := NewPlan(args, l, exe)
		if err != nil {
			return fail("%v", err)
		}
		// The git directory: on Linux qemu runs in a private user and mount
		// namespace where it is bound read-only, so its 9p server answers
		// writes under .git with EROFS whatever guest root does. The first
		// run re-execs itself through unshare(1) (same PID); the second run
		// (the stage) binds and checks.
		if staged, err = qemu.InStage(); err != nil {
			return fail("%v", err)
		}
		nameRule := runtime.GOOS == "linux" && plan.NameRule && len(plan.Exports) > 0
		if runtime.GOOS == "linux" && (len(plan.ReadOnly) > 0 || len(plan.Private) > 0 || nameRule) {
			if !staged {
				err := qemu.EnterNamespace(argv, env)
				return fail("box %s: cannot make its git directory read-only or cover its hidden paths for qemu: %v\nhint: corral doctor checks user namespaces; git_shadow = false in ~/.corral/projects/%s.toml lets the box write .git (the guard then reverts changes)", plan.Box, err, plan.Box)
			}
			// Empty submodule paths first: a read-only bind never lies
			// inside one (they hold no .git), and the order is fixed.
			if err := qemu.MountPrivate(plan.Private); err != nil {
				return fail("box %s: %v", plan.Box, err)
			}
			for _, m := range plan.Private {
				what := "submodule path private to the box"
				if m.Kind == qemu.PrivateHidden {
					what = "hidden from qemu"
				}
				fmt.Fprintf(os.Stderr, "corral qemu: box %s: %s: %s\n", plan.Box, what, m.Target)
			}
			if len(plan.ReadOnly) > 0 {
				if err := qemu.BindReadOnly(plan.ReadOnly); err != nil {
					return fail("box %s: %v", plan.Box, err)
				}
				fmt.Fprintf(os.Stderr, "corral qemu: box %s: read-only for qemu: %s\n", plan.Box, strings.Join(plan.ReadOnly, " "))
			}
		}
		for _, u := range plan.Unhidden {
			fmt.Fprintf(os.Stderr, "corral qemu: box %s: hide path left to the guest: %s\n", plan.Box, u)
		}
		opt := plan.Options
		if runtime.GOOS == "linux" {
			opt.Accel = qemu.AccelKVM
			if ok, why := qemu.KVMUsable(); !ok {
				opt.Accel = qemu.AccelTCG
				fmt.Fprintf(os.Stderr, "corral qemu: using TCG: %s\n", why)
			}
		}
		if n, err := strconv.Atoi(os.Getenv("CORRAL_QEMU_TB_MB")); err == nil {
			opt.TBSizeMB = n
		}
		out, err = qemu.Rewrite(args, opt)
		if err != nil {
			return fail("%v", err)
		}
		fmt.Fprintf(os.Stderr, "corral qemu: box %s: %s\n", plan.Box, plan.Describe())
		if d := plan.DescribeResume(); d != "" {
			fmt.Fprintf(os.Stderr, "corral qemu: box %s: %s\n", plan.Box, d)
		}
		fmt.Fprintf(os.Stderr, "corral qemu: box %s: %s\n", plan.Box, plan.DescribeMemory())
		// guest-conn (run by qemu per guest connection) finds the broker
		// socket in the same state directory.
		env = append(withoutEnv(env, paths.EnvHome), paths.EnvHome+"="+l.Home)
		if nameRule {
			// Last before the exec: the filter is on this thread only, and
			// qemu inherits it (core/namerule).
			rule, err := nameRuleFor(plan)
			if err != nil {
				return fail("box %s: %v", plan.Box, err)
			}
			if err := namerule.Start(exe, rule, os.Stderr); err != nil {
				return fail("box %s: %v", plan.Box, err)
			}
			fmt.Fprintf(os.Stderr, "corral qemu: box %s: no .git can be made in %s (name rule)\n", plan.Box, strings.Join(rule.Roots, " "))
		}
	}
	if staged {
		err = qemu.ExecWithoutCaps(real, append([]string{real}, out...), env)
	} else {
		err = syscall.Exec(real, append([]string{real}, out...), env)
	}
	fmt.Fprintf(os.Stderr, "corral qemu: exec %s: %v\n", real, err)
	return 1
}

// nameRuleFor is the rule qemu runs under: the exports as roots, and the
// box's private submodule directories (mounted by now) exempt by mount ID.
func nameRuleFor(plan Plan) (namerule.Rule, error) {
	rule := namerule.Rule{Box: plan.Box, Roots: plan.Exports}
	for _, m := range plan.Private {
		if m.Kind != qemu.PrivateBoxDir {
			continue
		}
		id, err := namerule.MountID(m.Target)
		if err != nil {
			return namerule.Rule{}, err
		}
		rule.Exempt = append(rule.Exempt, id)
	}
	return rule, nil
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
