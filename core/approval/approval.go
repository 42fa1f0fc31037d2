// Package approval stores the egress approvals a user grants for hosts a
// box's broker denied, and assembles a box's live allow-list from the
// agent's defaults, the egress config and those approvals.
//
// Approvals live in a machine-owned JSON file next to the box's trusted
// config layer, ~/.corral/projects/<box>.approvals.json, so that corral never
// rewrites the user's hand-written TOML (comments, order, other keys). The
// CLI (`corral allow`) and the menu-bar app may add approvals at the same
// time: every change is a read-modify-write under an exclusive flock on a
// sibling lock file (atomicfile.Update), and the file itself is replaced
// atomically, so readers such as the broker never see a partial file and no
// writer loses another's entry. The file is read as corral's own state
// through core/untrusted (regular file, non-blocking open, MaxFile), so a
// FIFO or /dev/zero in its place fails at once with an error naming it,
// never a command blocked while it holds the lock.
//
// Scopes:
//
//   - always: never expires; removed only by revoking it.
//   - session: lasts while the box runs. The lifecycle calls [ClearSession]
//     when the box stops; as a safety net it also expires [SessionMaxAge]
//     after it was granted, in case the stop was never seen (crash, reboot).
//   - for: a duration the user chose (`corral allow --for 2h`), between
//     [MinFor] and [MaxFor]; the approval records its end in Expires.
//   - once: exactly one connection (one CONNECT tunnel or one forwarded
//     request). The broker admits a connection by a once-approval only after
//     it removed the approval from the file under the file lock ([Store.Consume]),
//     so two connections, or two brokers, can never both use it. An unused
//     once-approval lapses after [OnceFor], so a forgotten one is not an
//     open-ended grant.
package approval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/untrusted"
)

// Scope says how long an approval lasts.
type Scope string

// Scopes, as stored in the approvals file and shown to users.
const (
	ScopeAlways  Scope = "always"
	ScopeSession Scope = "session"
	ScopeFor     Scope = "for"
	ScopeOnce    Scope = "once"
)

// Scopes lists the scopes, longest-lived first.
var Scopes = []Scope{ScopeAlways, ScopeSession, ScopeFor, ScopeOnce}

// Lifetimes of the expiring scopes, and the bounds of a chosen duration.
// Below MinFor a grant would lapse before a user could retry; above MaxFor
// "always" (revocable) is the honest scope.
const (
	OnceFor       = 10 * time.Minute
	SessionMaxAge = 12 * time.Hour
	MinFor        = time.Minute
	MaxFor        = 30 * 24 * time.Hour
)

// CheckFor checks a chosen duration for the "for" scope.
func CheckFor(d time.Duration) error {
	switch {
	case d <= 0:
		return hint.New(fmt.Errorf("approval duration %s: must be positive", d), "use a duration such as 30m or 2h")
	case d < MinFor:
		return hint.New(fmt.Errorf("approval duration %s: shorter than %s, it would lapse before a retry", d, MinFor), "use --once to allow a single connection")
	case d > MaxFor:
		return hint.New(fmt.Errorf("approval duration %s: longer than %s", d, "30 days (720h)"), "use --always (revocable with --revoke) for a lasting approval")
	}
	return nil
}

// ParseScope parses a scope name.
func ParseScope(s string) (Scope, error) {
	for _, sc := range Scopes {
		if string(sc) == s {
			return sc, nil
		}
	}
	return "", fmt.Errorf("unknown approval scope %q (want always, session, for or once)", s)
}

// expiry is when an approval of scope granted at now ends (zero: never);
// d is the chosen duration of ScopeFor.
func (s Scope) expiry(now time.Time, d time.Duration) time.Time {
	switch s {
	case ScopeSession:
		return now.Add(SessionMaxAge)
	case ScopeOnce:
		return now.Add(OnceFor)
	case ScopeFor:
		return now.Add(d)
	}
	return time.Time{}
}

// Approval is one granted entry.
type Approval struct {
	// Entry is an allow-list entry in egress syntax (host, *.suffix,
	// host:port or host:*), in canonical form.
	Entry string `json:"entry"`
	Scope Scope  `json:"scope"`
	// Added is when it was granted.
	Added time.Time `json:"added"`
	// Expires is when it ends; zero means never.
	Expires time.Time   `json:"expires,omitzero"`
	Actor   audit.Actor `json:"actor"`
}

// ActiveAt reports whether the approval is in force at now.
func (a Approval) ActiveAt(now time.Time) bool {
	exp := a.InForceUntil()
	return exp.IsZero() || now.Before(exp)
}

// InForceUntil is when the approval ends: Expires, capped by the
// organisation's max_approval (the managed layer), so an approval written
// before the policy or by hand lasts no longer than one granted under it.
// Zero means never.
func (a Approval) InForceUntil() time.Time {
	return config.SystemManaged().ApprovalExpiry(a.Added, a.Expires)
}

// ErrNotFound means a box has no approval for an entry.
var ErrNotFound = errors.New("no such approval")

// fileVersion is the format version of the approvals file.
const fileVersion = 1

type file struct {
	Version   int        `json:"version"`
	Box       string     `json:"box"`
	Approvals []Approval `json:"approvals"`
	// Denials are the user's answers "deny" to requests the box filed
	// (boxrequest.go); a running broker refuses the connections it held
	// for them.
	Denials []Denial `json:"denials,omitempty"`
}

// Path is the approvals file of a box. It is derived from the trusted layer's
// path here rather than in core/paths so that it always sits beside that
// layer: projects/<box>.toml -> projects/<box>.approvals.json.
func Path(l paths.Layout, box string) string {
	return strings.TrimSuffix(l.ProjectConfig(box), ".toml") + ".approvals.json"
}

// Store reads and changes the approvals of one box. Its methods may be
// called from several goroutines and processes at once.
type Store struct {
	path string
	box  string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Open returns the store of a box. It checks the box name (it becomes part
// of a file name) but not that the box exists.
func Open(l paths.Layout, box string) (*Store, error) {
	if err := project.CheckName(box, l.LimaHome()); err != nil {
		return nil, fmt.Errorf("approvals of box %q: %w", box, err)
	}
	return &Store{path: Path(l, box), box: box}, nil
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Canonical validates an allow-list entry and returns its canonical form
// (lowercase, punycode, no trailing dot): the one grammar,
// egress.ParseAllowEntry. A range is not an approval (it is a config-only
// entry). The error names the bad value.
func Canonical(entry string) (string, error) {
	e, err := egress.ParseAllowEntry(entry)
	if err != nil {
		return "", fmt.Errorf("allow entry %q: %w", entry, err)
	}
	if e.IsRange() {
		return "", fmt.Errorf("allow entry %q: a range is not an approval; add it to egress = [...] in the box's trusted layer", entry)
	}
	return e.String(), nil
}

// MaxFile caps the approvals file: thousands of approvals. A grant that
// would make the file larger is refused (revoke some first), so corral
// never writes a file it would then refuse to read.
const MaxFile = 1 << 20

// All returns every stored approval, expired ones included, in the order
// they were granted. A missing file has none. The file is read as a
// regular file of at most MaxFile bytes, without blocking (core/untrusted):
// a FIFO or a device in its place is an error naming it.
func (s *Store) All() ([]Approval, error) {
	b, err := untrusted.ReadJSON(s.path, untrusted.State(MaxFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, hint.New(fmt.Errorf("reading approvals of box %s: %w", s.box, err), s.remedy())
	}
	return s.parse(b)
}

// remedy is the hint for an approvals file corral cannot use.
func (s *Store) remedy() string {
	return "the file is written by corral; move it away or delete it (" + s.path + ") to drop every approval"
}

// parse decodes and checks the content of the approvals file: what All
// returns, and what update checks its new content with before writing it.
func (s *Store) parse(b []byte) ([]Approval, error) {
	f, err := s.parseFile(b)
	return f.Approvals, err
}

// parseFile is parse with the whole file: approvals and denials.
func (s *Store) parseFile(b []byte) (file, error) {
	var f file
	if err := json.Unmarshal(b, &f); err != nil {
		return file{}, hint.New(fmt.Errorf("reading approvals of box %s (%s): %w", s.box, s.path, err), s.remedy())
	}
	if f.Version > fileVersion {
		return file{}, fmt.Errorf("reading approvals of box %s (%s): format version %d is newer than this corral understands (%d)", s.box, s.path, f.Version, fileVersion)
	}
	var errs []error
	for _, d := range f.Denials {
		if err := d.check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.path, err))
			break
		}
	}
	for _, a := range f.Approvals {
		if _, err := Canonical(a.Entry); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.path, err))
		}
		if len(errs) == 10 {
			errs = append(errs, errors.New("(more problems not shown)"))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return file{}, hint.New(fmt.Errorf("reading approvals of box %s: %w", s.box, err), s.remedy())
	}
	return f, nil
}

// List returns the approvals in force at now, in the order they were
// granted.
func (s *Store) List(now time.Time) ([]Approval, error) {
	all, err := s.All()
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(a Approval) bool { return !a.ActiveAt(now) }), nil
}

// Active returns the entries in force at now.
func (s *Store) Active(now time.Time) ([]string, error) {
	list, err := s.List(now)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Entry
	}
	return out, nil
}

// Add grants entry with scope. An existing approval of the same entry is
// replaced, so the latest grant decides the scope (allowing "once" an entry
// that was allowed "always" narrows it). Expired approvals are dropped from
// the file on the way.
// ScopeFor takes its duration from [Store.AddFor].
func (s *Store) Add(entry string, scope Scope, actor audit.Actor) (Approval, error) {
	return s.add(entry, scope, 0, actor, nil)
}

// AddFor grants entry for d (the "for" scope); d must pass [CheckFor].
func (s *Store) AddFor(entry string, d time.Duration, actor audit.Actor) (Approval, error) {
	return s.add(entry, ScopeFor, d, actor, nil)
}

// add is Add with a record step: record (when not nil) runs under the file
// lock after the new file is made and checked whole (its cap, the reader's
// parse) and just before it is written, with its content; a failure stops
// the write, so an approval is never in force without its record, and no
// record is made of a change a check refuses.
func (s *Store) add(entry string, scope Scope, d time.Duration, actor audit.Actor, record func(Approval, []byte) error) (Approval, error) {
	canon, err := checkGrant(entry, scope, d)
	if err != nil {
		return Approval{}, err
	}
	now := s.now()
	a := Approval{Entry: canon, Scope: scope, Added: now.UTC(), Expires: scope.expiry(now.UTC(), d), Actor: actor}
	var commit func([]byte) error
	if record != nil {
		commit = func(out []byte) error { return record(a, out) }
	}
	err = s.updateFile(func(f *file) error {
		f.Approvals = slices.DeleteFunc(f.Approvals, func(x Approval) bool { return x.Entry == canon || !x.ActiveAt(now) })
		f.Approvals = append(f.Approvals, a)
		return nil
	}, commit)
	if err != nil {
		return Approval{}, fmt.Errorf("allowing %s for box %s: %w", canon, s.box, err)
	}
	return a, nil
}

// checkGrant checks what a grant asks for (the entry, its scope and
// duration) and returns the canonical entry: the checks of the request,
// before any file is read.
func checkGrant(entry string, scope Scope, d time.Duration) (string, error) {
	canon, err := Canonical(entry)
	if err != nil {
		return "", err
	}
	// The one grant check (config.CheckGrant): no approval may open a
	// whole public suffix ("*.com"). Only granting checks it: an old
	// approval of one can still be revoked, and AllowList leaves it out.
	if err := config.CheckGrant("egress", canon, config.GrantContext{}).Err(); err != nil {
		return "", err
	}
	if _, err := ParseScope(string(scope)); err != nil {
		return "", err
	}
	if scope == ScopeFor {
		if err := CheckFor(d); err != nil {
			return "", err
		}
	}
	// The organisation's floor (the managed layer): the longest an
	// approval may last.
	if err := config.SystemManaged().CheckApproval(string(scope), d); err != nil {
		return "", err
	}
	return canon, nil
}

// Remove revokes the approval of entry and returns it. It returns an error
// wrapping [ErrNotFound] if there is none in force.
func (s *Store) Remove(entry string) (Approval, error) {
	canon, err := Canonical(entry)
	if err != nil {
		return Approval{}, err
	}
	now := s.now()
	var removed Approval
	found := false
	err = s.update(func(list []Approval) ([]Approval, error) {
		return slices.DeleteFunc(list, func(x Approval) bool {
			if x.Entry == canon && x.ActiveAt(now) {
				removed, found = x, true
				return true
			}
			return !x.ActiveAt(now)
		}), nil
	})
	if err != nil {
		return Approval{}, fmt.Errorf("revoking %s for box %s: %w", canon, s.box, err)
	}
	if !found {
		return Approval{}, hint.New(fmt.Errorf("revoking %s for box %s: %w", canon, s.box, ErrNotFound), fmt.Sprintf("corral allow --list %s shows the approvals", s.box))
	}
	return removed, nil
}

// Consume uses up the once-approval of entry: it removes it if it is in
// force and reports whether it did. Of several callers (connections, or
// brokers in other processes) exactly one gets true for one approval: the
// removal is a read-modify-write under the file lock.
func (s *Store) Consume(entry string) (bool, error) {
	now := s.now()
	used := false
	err := s.update(func(list []Approval) ([]Approval, error) {
		return slices.DeleteFunc(list, func(x Approval) bool {
			if !used && x.Entry == entry && x.Scope == ScopeOnce && x.ActiveAt(now) {
				used = true
				return true
			}
			return false
		}), nil
	})
	if err != nil {
		return false, fmt.Errorf("using the once-approval of %s for box %s: %w", entry, s.box, err)
	}
	return used, nil
}

// ClearSession drops the box's session approvals (and expired ones). The
// lifecycle calls it when the box stops.
func (s *Store) ClearSession() error {
	now := s.now()
	err := s.update(func(list []Approval) ([]Approval, error) {
		return slices.DeleteFunc(list, func(x Approval) bool { return x.Scope == ScopeSession || !x.ActiveAt(now) }), nil
	})
	if err != nil {
		return fmt.Errorf("clearing session approvals of box %s: %w", s.box, err)
	}
	return nil
}

// update runs fn on the stored approvals and writes the result, as one
// atomicfile.Update: under the file's lock, so that no writer (CLI, app,
// brokers) loses another's change, and atomically replaced, so that readers
// never see half a file. An error from fn writes nothing. The new content
// is checked as a whole by the reader's own parse, size cap included,
// before it is written. The file is not written when fn changes nothing,
// so a no-op does not wake the broker's watcher.
func (s *Store) update(fn func([]Approval) ([]Approval, error)) error {
	return s.updateFile(func(f *file) error {
		next, err := fn(slices.Clone(f.Approvals))
		f.Approvals = next
		return err
	}, nil)
}

// updateFile is update with the whole file (approvals and denials): fn
// changes f in place. commit, when not nil, runs after every check of the
// new content, just before it is written (see add).
func (s *Store) updateFile(fn func(f *file) error, commit func(out []byte) error) error {
	err := atomicfile.UpdateJSON(s.path, untrusted.State(MaxFile), func(b []byte) ([]byte, error) {
		var old file
		if b != nil {
			var err error
			if old, err = s.parseFile(b); err != nil {
				return nil, err
			}
		}
		f := file{Approvals: slices.Clone(old.Approvals), Denials: slices.Clone(old.Denials)}
		if err := fn(&f); err != nil {
			return nil, err
		}
		if b != nil && slices.Equal(old.Approvals, f.Approvals) && slices.Equal(old.Denials, f.Denials) {
			return b, nil
		}
		next := f.Approvals
		if next == nil {
			next = []Approval{}
		}
		out, err := json.MarshalIndent(file{Version: fileVersion, Box: s.box, Approvals: next, Denials: f.Denials}, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("encoding approvals: %w", err)
		}
		out = append(out, '\n')
		if len(out) > MaxFile {
			return nil, hint.New(fmt.Errorf("approvals of box %s: the file would be %d bytes, more than the %d allowed", s.box, len(out), MaxFile),
				fmt.Sprintf("revoke approvals first (corral allow --list %s shows them)", s.box))
		}
		if err := untrusted.CheckJSON(out, untrusted.State(MaxFile)); err != nil {
			return nil, fmt.Errorf("approvals of box %s: refusing to write a file corral would not read: %w", s.box, err)
		}
		if _, err := s.parse(out); err != nil {
			return nil, fmt.Errorf("approvals of box %s: refusing to write a file corral would not read: %w", s.box, err)
		}
		if commit != nil {
			if err := commit(out); err != nil {
				return nil, err
			}
		}
		return out, nil
	})
	var fe *untrusted.FileError
	var se *untrusted.ShapeError
	if errors.As(err, &fe) || errors.As(err, &se) {
		return hint.New(fmt.Errorf("approvals of box %s: %w", s.box, err), s.remedy())
	}
	return err
}

// Allow grants entry to box with scope and records it in the audit log as
// an "allow" event by actor, with the entry, scope and expiry. The CLI's
// `corral allow` and the menu-bar app both call it; a running broker picks
// the approval up by watching the file.
func Allow(l paths.Layout, box, entry string, scope Scope, actor audit.Actor) (Approval, error) {
	return allow(l, box, entry, scope, 0, actor)
}

// AllowFor is [Allow] with the "for" scope: entry is allowed for d, which
// must pass [CheckFor].
func AllowFor(l paths.Layout, box, entry string, d time.Duration, actor audit.Actor) (Approval, error) {
	return allow(l, box, entry, ScopeFor, d, actor)
}

func allow(l paths.Layout, box, entry string, scope Scope, d time.Duration, actor audit.Actor) (Approval, error) {
	s, err := Open(l, box)
	if err != nil {
		return Approval{}, err
	}
	// A request that fails its own checks (a bad entry, "*.com") is an
	// error of the command, not a grant refused: nothing is recorded.
	if _, err := checkGrant(entry, scope, d); err != nil {
		// A refusal by the organisation's policy is recorded: its SIEM
		// sees who asked for what the policy forbids.
		if config.IsPolicyRefusal(err) {
			f := map[string]any{"entry": entry, "scope": string(scope)}
			if rerr := recordAudit(l, audit.Refusal(audit.KindAllow, box, actor, f, err)); rerr != nil {
				return Approval{}, errors.Join(err, rerr)
			}
		}
		return Approval{}, err
	}
	// The record is written under the approvals lock once the new file is
	// checked whole, before the write: if it cannot be written, the
	// approval is not either. A grant refused after all (a check or a cap,
	// or its write failed: disk full) is recorded as a refusal, with the
	// content hash of its record when one was made.
	fields := map[string]any{"entry": entry, "scope": string(scope)}
	recorded := ""
	a, err := s.add(entry, scope, d, actor, func(a Approval, out []byte) error {
		expires := "never"
		if !a.Expires.IsZero() {
			expires = a.Expires.Format(time.RFC3339)
		}
		fields = map[string]any{"entry": a.Entry, "scope": string(a.Scope), "expires": expires, audit.FieldSHA256: audit.Written(out)}
		if err := recordAudit(l, audit.Event{Time: a.Added, Kind: audit.KindAllow, Box: box, Actor: actor, Fields: fields}); err != nil {
			return fmt.Errorf("recording the approval in the audit log (nothing was allowed): %w", err)
		}
		recorded = audit.Written(out)
		return nil
	})
	if err != nil {
		if recorded == "" {
			delete(fields, audit.FieldSHA256)
		}
		_ = recordAudit(l, audit.Refusal(audit.KindAllow, box, actor, fields, err)) // best effort: err is the answer
	}
	return a, err
}

// Revoke removes the approval of entry from box. The audit log has no event
// kind for a revocation, so none is recorded.
func Revoke(l paths.Layout, box, entry string) (Approval, error) {
	s, err := Open(l, box)
	if err != nil {
		return Approval{}, err
	}
	return s.Remove(entry)
}

// ClearSession drops the session approvals of box; the lifecycle calls it
// when the box stops.
func ClearSession(l paths.Layout, box string) error {
	s, err := Open(l, box)
	if err != nil {
		return err
	}
	return s.ClearSession()
}

func recordAudit(l paths.Layout, ev audit.Event) error { return audit.Append(l.AuditLog(), ev) }
