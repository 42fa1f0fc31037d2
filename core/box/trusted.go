package box

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// Grant is one addition to a box's trusted layer (~/.corral/projects/<box>.toml):
// what `corral approve`, `corral port` and `corral egress learn --apply` write.
type Grant struct {
	// Entries are the entries per list key (config.RequestKeys), written
	// in that order.
	Entries map[string][]string
	// Why and Who make the comment above each statement ("# WHO DATE: WHY").
	Why, Who string
	// Audit are fields of the audit record besides "entries" (all of
	// them) and "scope" ("trusted").
	Audit map[string]any
	// Op names the command in an error ("approve"); Done says what would
	// have happened ("approved"): "recording it in the audit log (nothing
	// was approved)".
	Op, Done string
}

// WriteTrusted is corral's one writer of a box's trusted layer for a
// command: every key at once through config.Result.AddAllToTrusted (the
// grant check, the whole config loaded again, the file locked), so a
// problem with any key (a refused entry, the ports cap) writes none; then,
// under the lock and after every check, the audit record of what is about
// to be written (its entries and the SHA-256 of the new file: if it cannot
// be recorded, nothing is written), then the one write. A change refused
// by a check, or whose write fails after its record, is recorded as a
// refusal (audit.KindRefused), so the log never shows as allowed a grant
// that did not happen. r is the box's config as loaded; its trusted layer
// is the one written.
func WriteTrusted(l paths.Layout, r boxmeta.Resolved, g Grant, now time.Time) error {
	var all []string
	for k := range g.Entries {
		if !slices.Contains(config.RequestKeys, k) {
			return fmt.Errorf("%s: %s is not a list corral writes (nothing was %s)", g.Op, k, g.Done)
		}
	}
	for _, k := range config.RequestKeys {
		all = append(all, g.Entries[k]...)
	}
	fields := map[string]any{"entries": all, "scope": "trusted"}
	maps.Copy(fields, g.Audit)
	box := r.Project.Box
	recorded := ""
	_, err := r.Loaded.AddAllToTrusted(g.Entries, g.Why, g.Who, now, func(out []byte) error {
		f := maps.Clone(fields)
		f[audit.FieldSHA256] = audit.Written(out)
		if err := audit.Append(l.AuditLog(), audit.Event{Kind: audit.KindAllow, Box: box, Actor: audit.ActorCLI, Fields: f}); err != nil {
			return fmt.Errorf("%s: recording it in the audit log (nothing was %s): %w", g.Op, g.Done, err)
		}
		recorded = f[audit.FieldSHA256].(string)
		return nil
	})
	if err != nil {
		f := maps.Clone(fields)
		if recorded != "" {
			f[audit.FieldSHA256] = recorded
		}
		// Best effort: the refusal is the change's error either way.
		_ = audit.Append(l.AuditLog(), audit.Refusal(audit.KindAllow, box, audit.ActorCLI, f, err))
	}
	return err
}
