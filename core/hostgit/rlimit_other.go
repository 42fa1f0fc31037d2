//go:build !linux

package hostgit

// limitChild is a no-op where there is no prlimit(2) (macOS ignores
// RLIMIT_AS anyway): there git's GIT_ALLOC_LIMIT and ScanPack, which
// refuses a pack over the limits before git reads it, bound the memory.
func limitChild(pid int, addressSpace int64) error { return nil }

// childLimited says limitChild caps memory on this system.
const childLimited = false
