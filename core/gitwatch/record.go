package gitwatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// The record of what the watch found in a box's work tree since the box
// started, for `corral ls`, doctor and the app's notifications: a small
// file beside the box's other run state (the audit log has every find too,
// but is large and shared). The broker adds to it; the box's start clears
// it.

// Seen is one entry the watch reported.
type Seen struct {
	Path string    `json:"path"`
	Kind string    `json:"kind"`
	Time time.Time `json:"time"`
}

// MaxSeen caps the record: past it the oldest finds are dropped (the
// audit log keeps them all).
const MaxSeen = 64

var recordLimits = untrusted.Limits{Size: 64 << 10, Depth: 4, Items: 1024}

// RecordPath is where a box's record is.
func RecordPath(l paths.Layout, box string) string {
	return filepath.Join(l.RunDir(), box+".gitwatch.json")
}

// Add appends what the watch found to the box's record.
func Add(l paths.Layout, box string, s Seen) error {
	p := RecordPath(l, box)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return atomicfile.UpdateJSON(p, recordLimits, func(old []byte) ([]byte, error) {
		var seen []Seen
		if len(old) > 0 {
			if err := json.Unmarshal(old, &seen); err != nil {
				seen = nil // a broken record starts again; the audit log has them all
			}
		}
		if slices.ContainsFunc(seen, func(x Seen) bool { return x.Path == s.Path }) {
			return old, nil
		}
		seen = append(seen, s)
		if len(seen) > MaxSeen {
			seen = seen[len(seen)-MaxSeen:]
		}
		return json.Marshal(seen)
	})
}

// Read returns the box's record (nil when there is none).
func Read(l paths.Layout, box string) ([]Seen, error) {
	b, err := untrusted.ReadJSON(RecordPath(l, box), recordLimits)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var seen []Seen
	if err := json.Unmarshal(b, &seen); err != nil {
		return nil, fmt.Errorf("reading %s: %w", RecordPath(l, box), err)
	}
	return seen, nil
}

// Clear removes the box's record (its start: what a previous run found
// was reported then).
func Clear(l paths.Layout, box string) error {
	err := os.Remove(RecordPath(l, box))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
