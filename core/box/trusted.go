package box

import (
	"errors"
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
// command: the audit record first (if it cannot be written, nothing is
// written), then each key through config.Result.AddToTrusted (the grant
// check, the whole config loaded again, the file locked). r is the box's
// config as loaded; its trusted layer is the one written.
func WriteTrusted(l paths.Layout, r boxmeta.Resolved, g Grant, now time.Time) error {
	var keys, all []string
	for k := range g.Entries {
		if !slices.Contains(config.RequestKeys, k) {
			return fmt.Errorf("%s: %s is not a list corral writes (nothing was %s)", g.Op, k, g.Done)
		}
	}
	for _, k := range config.RequestKeys {
		if len(g.Entries[k]) > 0 {
			keys = append(keys, k)
			all = append(all, g.Entries[k]...)
		}
	}
	fields := map[string]any{"entries": all, "scope": "trusted"}
	maps.Copy(fields, g.Audit)
	alog, err := audit.Open(l.AuditLog())
	if err != nil {
		return err
	}
	err = alog.Record(audit.Event{Kind: audit.KindAllow, Box: r.Project.Box, Actor: audit.ActorCLI, Fields: fields})
	if err = errors.Join(err, alog.Close()); err != nil {
		return fmt.Errorf("%s: recording it in the audit log (nothing was %s): %w", g.Op, g.Done, err)
	}
	for _, k := range keys {
		if err := r.Loaded.AddToTrusted(k, g.Entries[k], g.Why, g.Who, now); err != nil {
			return err
		}
	}
	return nil
}
