package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/corral-dev/corral/core/box"
	"github.com/corral-dev/corral/core/qemu"
)

// isQemuShim reports whether corral was started as Lima's qemu (through
// the run/bin/qemu-system-<arch> link the lifecycle service creates).
func isQemuShim(argv0 string) bool {
	return strings.HasPrefix(filepath.Base(argv0), box.QemuShimName)
}

// qemuMain rewrites Lima's qemu command line and execs the real qemu:
// KVM when it is usable, TCG otherwise (nested PVM cannot boot a stock
// kernel). It fails closed: no real qemu, or an argv it cannot vouch for,
// means no start.
func qemuMain(args []string) int {
	arch := strings.TrimPrefix(filepath.Base(os.Args[0]), box.QemuShimName)
	real, err := qemu.FindQemu(arch)
	if err != nil {
		fmt.Fprintf(os.Stderr, "corral qemu: %v\n", err)
		return 1
	}
	out := args
	if !qemu.IsProbe(args) {
		opt := qemu.Options{Accel: qemu.AccelKVM}
		if ok, why := qemu.KVMUsable(); !ok || runtime.GOOS != "linux" {
			opt.Accel = qemu.AccelTCG
			fmt.Fprintf(os.Stderr, "corral qemu: using TCG: %s\n", why)
		}
		if n, err := strconv.Atoi(os.Getenv("CORRAL_QEMU_TB_MB")); err == nil {
			opt.TBSizeMB = n
		}
		out, err = qemu.Rewrite(args, opt)
		if err != nil {
			fmt.Fprintf(os.Stderr, "corral qemu: refusing to start: %v\n", err)
			return 1
		}
	}
	err = syscall.Exec(real, append([]string{real}, out...), os.Environ())
	fmt.Fprintf(os.Stderr, "corral qemu: exec %s: %v\n", real, err)
	return 1
}
