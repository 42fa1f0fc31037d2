package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/untrusted"
)

// Learning is a box's learning window: while it is active the box's
// broker also allows public destinations off the allow-list and logs them
// (egress.Policy.Learning), so that `corral egress learn` can propose an
// allow-list from what the box used. It starts with `corral up --learn`,
// or at the first start of a box whose config says network = "learn", and
// lasts learn_for; `corral egress learn --apply` ends it early. Once it
// ended the broker enforces again: a config that still says "learn" does
// not start a new window (only `corral up --learn` does).
//
// It lives beside the approvals, in a machine-owned file the broker
// watches: ~/.corral/projects/<box>.learn.json.
type Learning struct {
	Started time.Time `json:"started"`
	Until   time.Time `json:"until"`
	// Ended is set when learning was ended before Until.
	Ended time.Time   `json:"ended,omitzero"`
	Actor audit.Actor `json:"actor"`
}

// ActiveAt reports whether the box learns at now.
func (l Learning) ActiveAt(now time.Time) bool {
	return !l.Started.IsZero() && l.Ended.IsZero() && !now.Before(l.Started) && now.Before(l.Until)
}

// End is when learning ended or ends: Ended, else Until.
func (l Learning) End() time.Time {
	if !l.Ended.IsZero() {
		return l.Ended
	}
	return l.Until
}

// LearnPath is the learning file of a box, beside its approvals.
func LearnPath(l paths.Layout, box string) string {
	return strings.TrimSuffix(l.ProjectConfig(box), ".toml") + ".learn.json"
}

// maxLearnFile caps the learning file read (it is a few hundred bytes).
const maxLearnFile = 4 << 10

// ReadLearning returns a box's learning window; the zero value when it
// never learned.
func ReadLearning(l paths.Layout, box string) (Learning, error) {
	if err := project.CheckName(box, l.LimaHome()); err != nil {
		return Learning{}, fmt.Errorf("learning of box %q: %w", box, err)
	}
	path := LearnPath(l, box)
	b, err := untrusted.ReadJSON(path, untrusted.State(maxLearnFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Learning{}, nil
	}
	if err != nil {
		return Learning{}, fmt.Errorf("reading %s: %w", path, err)
	}
	var lr Learning
	if err := json.Unmarshal(b, &lr); err != nil {
		return Learning{}, fmt.Errorf("reading %s: %w", path, err)
	}
	return lr, nil
}

// StartLearning starts a new learning window of d at now, replacing any
// earlier one, and records it in the audit log.
func StartLearning(l paths.Layout, box string, d time.Duration, now time.Time, actor audit.Actor) (Learning, error) {
	if d < time.Minute || d > config.MaxLearnFor {
		return Learning{}, fmt.Errorf("learning for %s: want between 1m and %s", d, config.MaxLearnFor)
	}
	lr := Learning{Started: now.UTC(), Until: now.Add(d).UTC(), Actor: actor}
	// The audit record comes first: unrecorded, learning does not start.
	if err := recordAudit(l, audit.Event{Kind: audit.KindLearn, Box: box, Actor: actor,
		Fields: map[string]any{"until": lr.Until, "for": d.String()}}); err != nil {
		return Learning{}, fmt.Errorf("learning of box %s: recording it in the audit log: %w", box, err)
	}
	return lr, writeLearning(l, box, lr)
}

// StopLearning ends an active learning window at now. It reports whether
// one was active.
func StopLearning(l paths.Layout, box string, now time.Time, actor audit.Actor) (bool, error) {
	lr, err := ReadLearning(l, box)
	if err != nil || !lr.ActiveAt(now) {
		return false, err
	}
	lr.Ended = now.UTC()
	if err := writeLearning(l, box, lr); err != nil {
		return false, err
	}
	// Ending learning narrows access: an audit failure does not undo it.
	_ = recordAudit(l, audit.Event{Kind: audit.KindLearn, Box: box, Actor: actor, Fields: map[string]any{"ended": lr.Ended}})
	return true, nil
}

func writeLearning(l paths.Layout, box string, lr Learning) error {
	if err := project.CheckName(box, l.LimaHome()); err != nil {
		return fmt.Errorf("learning of box %q: %w", box, err)
	}
	b, err := json.MarshalIndent(lr, "", "  ")
	if err != nil {
		return err
	}
	path := LearnPath(l, box)
	if err := atomicfile.WriteFile(path, append(b, '\n'), atomicfile.FileMode); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
