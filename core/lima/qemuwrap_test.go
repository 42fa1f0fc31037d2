package lima

import (
	"fmt"
	"os"
	"syscall"

	"github.com/corral-dev/corral/core/qemu"
)

// qemuWrapperMain is a stand-in for corral's hidden `corral qemu` subcommand: the e2e test copies the test
// binary somewhere the limactl user can run it and sets QEMU_SYSTEM_X86_64 to it when KVM is not usable.
func qemuWrapperMain(args []string) int {
	out, err := qemu.Rewrite(args, qemu.Options{Accel: qemu.AccelTCG})
	if err != nil {
		fmt.Fprintln(os.Stderr, "test qemu wrapper:", err)
		return 1
	}
	real, err := qemu.FindQemu("x86_64")
	if err != nil {
		fmt.Fprintln(os.Stderr, "test qemu wrapper:", err)
		return 1
	}
	err = syscall.Exec(real, append([]string{real}, out...), os.Environ())
	fmt.Fprintln(os.Stderr, "test qemu wrapper: exec:", err)
	return 1
}
