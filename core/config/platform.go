package config

import (
	"slices"
	"strconv"
	"strings"
)

// checkPlatform makes vm_type and mount_type agree with each other and
// with the host, after the merge. Lima's rules (pkg/driver/qemu
// validateMountType and pkg/driver/vz validateConfig, 1.2 and 2.2): qemu
// off Linux takes only 9p and reverse-sshfs; vz takes virtiofs and
// reverse-sshfs, and exists only on macOS.
//
// mount_type's built-in default follows vm_type: it is "virtiofs" on macOS
// because vz is the default there, so a user who sets only vm_type =
// "qemu" on a Mac gets 9p (recorded in the origin). A mount_type that a
// file or flag set is never changed: a combination Lima refuses is a
// violation naming the key, before any VM is touched.
func checkPlatform(p Platform, eff *Effective) []error {
	c := &eff.Config
	if c.VMType == nil || c.MountType == nil {
		return nil
	}
	vm, mt := *c.VMType, *c.MountType
	var errs []error
	bad := func(key, value, reason, fix string) {
		errs = append(errs, &Violation{File: strings.Join(eff.Origin[key], ", "), Key: key, Value: strconv.Quote(value), Reason: reason, Fix: fix})
	}
	if vm == VMTypeVZ && p.OS != "darwin" {
		bad("vm_type", string(vm), "vz (Apple's Virtualization.framework) exists only on macOS", `use vm_type = "qemu"`)
		return errs
	}
	allowed := MountTypesFor(p, vm)
	if slices.Contains(allowed, mt) {
		return errs
	}
	if slices.Equal(eff.Origin["mount_type"], []string{"default"}) {
		c.MountType = ptr(allowed[0])
		eff.Origin["mount_type"] = append(eff.Origin["mount_type"], "vm_type "+string(vm)+" (default "+string(allowed[0])+")")
		return errs
	}
	bad("mount_type", string(mt), "Lima's "+string(vm)+" driver on "+osName(p.OS)+" cannot mount "+string(mt),
		"use mount_type = "+quoteList(names(allowed...))+`, or remove mount_type to get the default`)
	return errs
}

// MountTypesFor lists the mount types Lima accepts for vmType on p, the
// preferred first (the one a default falls back to).
func MountTypesFor(p Platform, vmType VMType) []MountType {
	switch {
	case vmType == VMTypeVZ:
		return []MountType{MountVirtiofs, MountReverseSSHFS}
	case p.OS == "linux":
		return []MountType{Mount9p, MountVirtiofs, MountReverseSSHFS}
	default: // qemu on macOS: no virtiofsd there
		return []MountType{Mount9p, MountReverseSSHFS}
	}
}

func osName(goos string) string {
	if goos == "darwin" {
		return "macOS"
	}
	return goos
}
