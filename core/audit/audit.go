// Package audit records what happened to boxes in an append-only JSON-lines
// log (~/.corral/logs/audit.jsonl, paths.Layout.AuditLog) shared by the CLI, the menu-bar
// app and the idle sweeper, which may write at the same time from different
// processes. It sits on package jsonl, which keeps lines whole and rotates the
// file at MaxBytes keeping one older generation, plus every event but egress
// denials for [Retention] (see [Keep]).
//
// The log must never hold secret values. Session starts record the names of
// forwarded environment variables in Event.EnvNames; there is deliberately no
// field for their values, and callers must not put values in Fields.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/jsonl"
)

// Schema names every line of the audit log (the first key of each) and
// every event `corral audit --json` prints (docs/JSON.md).
const Schema = "corral.audit-event/v1"

// MaxBytes is the size at which the audit log is rotated to path + ".1".
const MaxBytes = 16 << 20

// Kind says what happened.
type Kind string

// Event kinds.
const (
	KindCreate   Kind = "create"
	KindStart    Kind = "start"
	KindStop     Kind = "stop"
	KindIdleStop Kind = "idle-stop"
	// KindSave, KindIdleSave and KindResume: a box's VM state was saved
	// to its disk (corral stop --save, idle_action = "save") and resumed.
	KindSave     Kind = "save"
	KindIdleSave Kind = "idle-save"
	KindResume   Kind = "resume"
	// KindLowMemorySave: the idle sweep saved the least recently used idle
	// box because the host's available memory was under
	// save_when_free_below (FieldAvailableBytes, FieldThresholdBytes).
	KindLowMemorySave Kind = "low-memory-save"
	KindRebuild       Kind = "rebuild"
	KindRm            Kind = "rm"
	KindSessionStart  Kind = "session-start"
	KindSessionEnd    Kind = "session-end"
	KindEgressDenied  Kind = "egress-denied"
	KindAllow         Kind = "allow"
	KindGC            Kind = "gc"
	KindSnapshot      Kind = "snapshot"
	KindRestore       Kind = "restore"
	// KindGitGuard: the host guard reverted a change to what git executes
	// from a box's project (core/gitshadow).
	KindGitGuard Kind = "git-guard"
	// KindNestedGit: a box's project holds git repositories other than its
	// own that are not submodules (gitshadow.FindNested): host git run in
	// one would use the config the box wrote.
	KindNestedGit Kind = "nested-git"
	// KindGitNameRefused: qemu's name rule (core/namerule) refused a
	// box's call that would have made a .git entry in the work tree, or
	// changed one; fields "call", "path", "why" (box-made text: escape
	// it before display). The first few per boot, then a count.
	KindGitNameRefused Kind = "git-name-refused"
	KindPull           Kind = "pull"
	// KindLearn: a box's learning window started or ended (core/approval).
	KindLearn Kind = "learn"
	// KindCredentialUse: a box's broker used a brokered credential, one
	// line per credential, session, upstream, method and path class per
	// flush (see [CredentialFields]).
	KindCredentialUse Kind = "credential-use"
	// KindCredentialRefused: a box's broker refused credential requests,
	// one line per reason (and credential, when the token was valid) per
	// flush: a flood of bogus requests is a count, not a line each.
	KindCredentialRefused Kind = "credential-refused"
	// KindHost: a remote host was added to or removed from
	// ~/.corral/hosts.toml, or its credentials granted or revoked
	// (core/remote); fields "op", "host", "url", "credentials".
	KindHost Kind = "host"
	// KindReceive: another machine sent a project to this one, its remote
	// host (corral project receive, docs/REMOTE.md); fields as a pull's,
	// with "branch", or "refused".
	KindReceive Kind = "receive"
	// KindRefused: a change to a box's trusted layer or approvals, or to
	// the hosts file, was refused (a check or a cap, or its write failed):
	// nothing of it was written. Fields: FieldOf (the kind the change
	// would have recorded: allow, host), FieldReason, the change's own
	// fields, and FieldSHA256 when its "allow" or "host" line was already
	// recorded (the write failed after it): that line's grant did not
	// happen. See [Written].
	KindRefused Kind = "refused"
)

// Fields of a change's record (allow, host) and of its refusal.
const (
	// FieldSHA256 is the SHA-256 (hex) of the whole file the change
	// writes, recorded before the write: the file holding exactly that
	// content is the proof the change was written; a refusal with the
	// same value says it was not.
	FieldSHA256 = "sha256"
	// FieldOf is the kind a refused change would have been recorded as.
	FieldOf = "of"
)

// Written is the FieldSHA256 value of content.
func Written(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}

// Append records ev in the audit log at path, opening and closing it: for
// commands that record one event.
func Append(path string, ev Event) error {
	l, err := Open(path)
	if err != nil {
		return err
	}
	return errors.Join(l.Record(ev), l.Close())
}

// Refusal is the refused-change event for a change that would have been
// recorded as of, refused for reason err (cut to 300 bytes); fields are
// the change's own (copied).
func Refusal(of Kind, box string, actor Actor, fields map[string]any, err error) Event {
	f := map[string]any{}
	for k, v := range fields {
		f[k] = v
	}
	f[FieldOf] = string(of)
	reason := err.Error()
	if len(reason) > 300 {
		reason = reason[:300] + "…"
	}
	f[FieldReason] = reason
	return Event{Kind: KindRefused, Box: box, Actor: actor, Fields: f}
}

// Field names of the credential events. Never a value, a token, a path or
// a query: the path class instead (core/egress PathClass).
const (
	FieldCredential = "credential"
	FieldSession    = "session"
	FieldUpstream   = "upstream"
	FieldMethod     = "method"
	FieldClass      = "class"
	FieldCount      = "count"
	FieldFirst      = "first"
	FieldLast       = "last"
	FieldStatus     = "status" // the last status the box got
	FieldFailed     = "failed" // how many of count got a 4xx/5xx
	FieldReason     = "reason"
	// FieldHost is the remote host a laptop's relay served (core/broker
	// LaptopRelay): each relayed use and refusal names it.
	FieldHost = "host"
	// FieldAvailableBytes and FieldThresholdBytes are the host's available
	// memory and save_when_free_below of a KindLowMemorySave.
	FieldAvailableBytes = "available_bytes"
	FieldThresholdBytes = "threshold_bytes"
)

// Actor says which part of corral acted.
type Actor string

// Actors.
const (
	ActorCLI   Actor = "cli"
	ActorApp   Actor = "app"
	ActorSweep Actor = "sweep"
)

// Event is one audit record. Its JSON form is one line of the log.
type Event struct {
	Time  time.Time `json:"time"`
	Kind  Kind      `json:"kind"`
	Box   string    `json:"box,omitempty"`
	Actor Actor     `json:"actor,omitempty"`
	// EnvNames lists the names (never the values) of environment variables
	// forwarded into a session; set on KindSessionStart.
	EnvNames []string `json:"env_names,omitempty"`
	// Fields holds kind-specific details such as "host" for egress events.
	// Values read back from the log are JSON-decoded (numbers are float64).
	Fields map[string]any `json:"fields,omitempty"`
}

// SessionStart returns a session-start event that records only the names of
// the forwarded environment variables.
func SessionStart(box string, actor Actor, envNames []string) Event {
	return Event{Kind: KindSessionStart, Box: box, Actor: actor, EnvNames: envNames}
}

// Log appends events to an audit log file. It is safe for concurrent use.
type Log struct {
	w   *jsonl.Writer
	now func() time.Time
}

// Retention is how long an event other than an egress denial survives
// rotation of the audit log, however many denials any box floods it with.
const Retention = 14 * 24 * time.Hour

// Keep is the jsonl keep rule of the audit log: every event younger than
// [Retention] except egress denials (each box's egress log has those). So
// one box's flood of denials cannot rotate another box's (or its own)
// lifecycle, session and approval events out.
func Keep(line []byte, now time.Time) bool {
	var ev struct {
		Time time.Time `json:"time"`
		Kind Kind      `json:"kind"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return false
	}
	return ev.Kind != KindEgressDenied && now.Sub(ev.Time) < Retention
}

// Open opens the audit log at path for appending, creating it (mode 0600,
// parent directory 0700) if needed.
func Open(path string) (*Log, error) {
	w, err := jsonl.Open(path, jsonl.Options{MaxBytes: MaxBytes, Keep: Keep, Schema: Schema})
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	return &Log{w: w, now: time.Now}, nil
}

// Record appends ev. A zero Time is set to now; times are stored in UTC.
func (l *Log) Record(ev Event) error {
	if ev.Kind == "" {
		return fmt.Errorf("recording audit event for box %q: empty kind", ev.Box)
	}
	if ev.Time.IsZero() {
		ev.Time = l.now()
	}
	ev.Time = ev.Time.UTC()
	ev.EnvNames = namesOnly(ev.EnvNames)
	if err := l.w.Append(ev); err != nil {
		return fmt.Errorf("recording %s event for box %q: %w", ev.Kind, ev.Box, err)
	}
	return nil
}

// namesOnly drops anything from "=" on, so that a caller passing
// os.Environ()-style "NAME=value" entries still records only names.
func namesOnly(names []string) []string {
	var out []string
	for i, n := range names {
		if name, _, ok := strings.Cut(n, "="); ok {
			if out == nil {
				out = slices.Clone(names)
			}
			out[i] = name
		}
	}
	if out == nil {
		return names
	}
	return out
}

// Close closes the log.
func (l *Log) Close() error { return l.w.Close() }

// Filter selects events in Read. Zero fields select everything.
type Filter struct {
	Since time.Time // events at or after Since
	Box   string    // events for this box only
}

// Read returns the events in the log at path and its rotated generation,
// oldest first, that match f. A missing log is empty. Lines that are not
// valid events (for instance from a hand edit) are skipped so that one bad
// line does not hide the rest of the history.
func Read(path string, f Filter) ([]Event, error) {
	var out []Event
	err := jsonl.ReadAll(path, func(line []byte) error {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Kind == "" {
			return nil
		}
		if !f.Since.IsZero() && ev.Time.Before(f.Since) {
			return nil
		}
		if f.Box != "" && ev.Box != f.Box {
			return nil
		}
		out = append(out, ev)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading audit log: %w", err)
	}
	return out, nil
}

// older reads the events of the log's older generations (kept lines, the
// rotated file); Follow goes on with the live file from its start.
func older(path string, fn func([]byte) error) error {
	if err := jsonl.ReadOlder(path, fn); err != nil {
		return fmt.Errorf("reading audit log: %w", err)
	}
	return nil
}
