package qemu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeKVMHost(t *testing.T, pvm bool, flags string, dev bool) kvmHost {
	t.Helper()
	d := t.TempDir()
	h := kvmHost{sysModule: filepath.Join(d, "sys"), cpuinfo: filepath.Join(d, "cpuinfo"), dev: filepath.Join(d, "kvm")}
	if err := os.MkdirAll(h.sysModule, 0o755); err != nil {
		t.Fatal(err)
	}
	if pvm {
		if err := os.Mkdir(filepath.Join(h.sysModule, "kvm_pvm"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	info := "processor\t: 0\nflags\t\t: " + flags + "\n\nprocessor\t: 1\nflags\t\t: " + flags + "\n"
	if err := os.WriteFile(h.cpuinfo, []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	if dev {
		if err := os.WriteFile(h.dev, nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func TestKVMUsable(t *testing.T) {
	tests := []struct {
		name       string
		pvm        bool
		flags      string
		dev        bool
		want       bool
		reasonPart string
	}{
		{"hardware intel", false, "fpu vme vmx sse2", true, true, "hardware"},
		{"hardware amd", false, "fpu svm sse2", true, true, "hardware"},
		{"nested pvm", true, "fpu vmx sse2", true, false, "kvm_pvm"},
		{"no virt flag", false, "fpu vme sse2 hypervisor", true, false, "vmx or svm"},
		{"vmxx is not vmx", false, "fpu vmxx", true, false, "vmx or svm"},
		{"no device", false, "fpu vmx", false, false, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, reason := fakeKVMHost(t, tt.pvm, tt.flags, tt.dev).usable()
			if ok != tt.want || !strings.Contains(reason, tt.reasonPart) {
				t.Errorf("usable() = %v, %q; want %v, ...%s...", ok, reason, tt.want, tt.reasonPart)
			}
		})
	}
}

// TestKVMUsableThisHost only checks that the real probe answers; the answer depends on the machine.
func TestKVMUsableThisHost(t *testing.T) {
	ok, reason := KVMUsable()
	if reason == "" {
		t.Errorf("KVMUsable() = %v with an empty reason", ok)
	}
	t.Logf("KVMUsable() = %v: %s", ok, reason)
}
