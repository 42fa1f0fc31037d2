package qemu

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
)

// kvmHost is what KVMUsable looks at; tests point it at a fake tree.
type kvmHost struct {
	sysModule string // /sys/module
	cpuinfo   string // /proc/cpuinfo
	dev       string // /dev/kvm
}

var realKVMHost = kvmHost{sysModule: "/sys/module", cpuinfo: "/proc/cpuinfo", dev: "/dev/kvm"}

// KVMUsable reports whether qemu should use KVM on this Linux host, and if not, why.
//
// It says no for a nested PVM host (the kvm_pvm module: /dev/kvm opens and KVM_CREATE_VM succeeds, but a stock
// Debian kernel dies in PVM's instruction emulator), for a CPU without vmx/svm, and for a /dev/kvm this user
// cannot open read-write. A yes is not a proof that a guest boots; it is the cheap check before trying.
func KVMUsable() (bool, string) {
	return realKVMHost.usable()
}

func (h kvmHost) usable() (bool, string) {
	if _, err := os.Stat(h.sysModule + "/kvm_pvm"); err == nil {
		return false, "kvm_pvm is loaded: /dev/kvm is nested PVM, which cannot boot a stock guest kernel; using TCG"
	}
	info, err := os.ReadFile(h.cpuinfo)
	if err != nil {
		return false, fmt.Sprintf("reading %s: %v", h.cpuinfo, err)
	}
	if !hasVirtFlag(info) {
		return false, "the CPU has no vmx or svm flag (no hardware virtualization exposed to this machine)"
	}
	f, err := os.OpenFile(h.dev, os.O_RDWR, 0)
	if err != nil {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return false, h.dev + " does not exist (kvm module not loaded?)"
		case errors.Is(err, os.ErrPermission):
			return false, h.dev + " is not writable by this user: add the user to the kvm group"
		}
		return false, fmt.Sprintf("opening %s: %v", h.dev, err)
	}
	_ = f.Close()
	return true, "hardware KVM"
}

func hasVirtFlag(cpuinfo []byte) bool {
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte("flags")) {
			continue
		}
		_, flags, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		for _, f := range bytes.Fields(flags) {
			if string(f) == "vmx" || string(f) == "svm" {
				return true
			}
		}
		return false // all CPUs have the same flags; the first line decides
	}
	return false
}
