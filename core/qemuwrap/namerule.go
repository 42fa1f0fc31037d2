package qemuwrap

import (
	"os"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/namerule"
	"github.com/corral-dev/corral/core/paths"
)

// NameRuleMain is the name rule's supervisor (`corral qemu-name-rule`,
// started by Main's stage before qemu): refusals go to stderr and, the
// first few, to the audit log.
func NameRuleMain(args []string) int {
	var log *audit.Log
	if l, err := paths.Default(); err == nil {
		log, _ = audit.Open(l.AuditLog())
	}
	box := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--box" {
			box = args[i+1]
		}
	}
	record := func(r namerule.Refusal) {
		if log == nil {
			return
		}
		_ = log.Record(audit.Event{Kind: audit.KindGitNameRefused, Box: box, Fields: map[string]any{
			"call": r.Call, "path": r.At, "why": r.Why,
		}})
	}
	return namerule.Main(args, os.Stderr, record)
}
