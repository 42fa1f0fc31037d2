// Package remotebox reads the boxes of a remote host (corral host add) for
// the menu, and acts on one of them, through that host's own corral over
// ssh (core/remote).
//
// A read is, per host and under one deadline (Client.Timeout), over one
// ssh connection when the runner shares one (remote.Runner.ControlDir,
// as the menu's does):
//
//  1. the version check (remote.Runner.CheckVersion): both sides the same
//     build, so the JSON below is the format this binary prints;
//  2. `corral ls --json`: the host's boxes (DecodeList);
//  3. `corral egress --json -- BOX` for each broker box, at most
//     MaxEgressReads of them, running boxes first: its denied
//     destinations of the last 24 hours (DecodeEgress).
//
// Everything the host prints is hostile to this side: a compromised host,
// or anything that escaped a box there, writes it. So every answer is
// capped before it is decoded (MaxListBytes, MaxEgressBytes), decoded
// strictly (exact keys, each at most once, each value of its one type,
// nothing after the document), and checked (box names by the box name
// rule, states by the state machine, paths absolute and clean, numbers in
// range, counts capped). Keys this reader does not use are skipped
// unparsed, on purpose: the same build prints fields the menu does not
// show, and a reader that refused them would break at every new field.
// Host names of denials are kept as the broker logged them (bounded): the
// menu shows them only through core/display, as it shows local denials,
// and offers Allow only for a canonical host (menu.Allowable).
//
// A host that cannot be read is a Result with Err: the reason (Reason)
// is one line for the menu, never a hang. An action (Start, Stop, Allow)
// is one remote command, checked here before it is sent (names by their
// rules, the entry canonical) and passed after "--", so nothing the host
// sent can become an option.
package remotebox

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
	"github.com/corral-dev/corral/core/project"
	"github.com/corral-dev/corral/core/remote"
)

// Box is one box on a remote host, as its corral reported it.
type Box struct {
	Name string
	// Project is the project's path on the host; "" when the host gave
	// none that is absolute, clean and free of control characters (no
	// action then carries it).
	Project string
	// State is the box's shown state (boxstate.Of of what the host said).
	State       boxstate.State
	MemBytes    uint64
	PeakBytes   uint64
	MemCapBytes uint64
	Idle        time.Duration
	Sessions    int
	// Broker is set for a broker-mode box (network broker or learn): only
	// those have denials.
	Broker        bool
	LearningUntil time.Time
	// Denied are the destinations the box's broker refused in the last 24
	// hours, newest first, at most MaxDenials.
	Denied []Denial
	// DeniedErr says why Denied is unknown ("" when it was read, or the
	// box has no broker).
	DeniedErr string
}

// Denial is one destination a remote box's broker refused.
type Denial struct {
	Host  string // as logged: a canonical host, or the raw text of a malformed request (bounded)
	Port  int
	Count int
	Last  time.Time
	// Malformed: the request did not parse; Host is raw text, never
	// something to allow.
	Malformed bool
}

// Result is one read of one host.
type Result struct {
	Host  string // the host's name (hosts.toml)
	URL   string
	Boxes []Box // sorted by name
	// Err is set when the host could not be read (Boxes is then nil):
	// unreachable, refused, another corral, or an answer that did not
	// decode. Reason says it in one line.
	Err error
	At  time.Time // when the read ended
}

// Limits of one read.
const (
	MaxListBytes    = 1 << 20 // ls --json
	MaxEgressBytes  = 1 << 20 // egress --json of one box
	MaxBoxes        = 256     // boxes of one host
	MaxEgressReads  = 16      // boxes whose denials one read asks for
	MaxDestinations = 4096    // destinations of one egress answer
	MaxDenials      = 64      // denials kept per box
	maxKeys         = 128     // keys of one JSON object
	maxPath         = 1024    // a project path
	maxHost         = 1024    // a denial's host text
	maxShort        = 256     // network, reason, provision_error, idle_stop ...
	maxReason       = 200     // runes of a Reason
	deniedSince     = "24h"   // the window of denials (the local menu's too)
)

// DefaultTimeout bounds one host's whole read.
const DefaultTimeout = 20 * time.Second

// Client reads and acts on remote hosts' boxes.
type Client struct {
	// Runner runs the remote corral; set Batch for the menu (no prompt
	// can be answered there).
	Runner remote.Runner
	// Timeout bounds one host's read; 0 means DefaultTimeout. Actions have
	// their own bounds (ActionTimeout, StartTimeout).
	Timeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

func (c Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Read reads h's boxes and their denials within the client's timeout. It
// never returns an error: a host that cannot be read is a Result with Err.
func (c Client) Read(ctx context.Context, h remote.Host) Result {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := Result{Host: h.Name, URL: h.URL}
	boxes, err := c.read(ctx, h)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			// ssh was killed at the deadline; what it said meanwhile does
			// not matter.
			err = fmt.Errorf("host %s: no answer within %s: %w", h.Name, timeout, ctx.Err())
		}
		res.Err = err
	} else {
		res.Boxes = boxes
	}
	res.At = c.now()
	return res
}

func (c Client) read(ctx context.Context, h remote.Host) ([]Box, error) {
	if err := c.Runner.CheckVersion(ctx, h); err != nil {
		return nil, err
	}
	out, err := c.Runner.Output(ctx, h, []string{"ls", "--json"}, MaxListBytes)
	if err != nil {
		return nil, err
	}
	boxes, err := DecodeList(out)
	if err != nil {
		return nil, fmt.Errorf("host %s: corral ls --json: %w", h.Name, err)
	}
	// Running boxes first: their denials are the ones to answer now.
	order := make([]int, 0, len(boxes))
	for i, b := range boxes {
		if b.Broker && b.State.Up() {
			order = append(order, i)
		}
	}
	for i, b := range boxes {
		if b.Broker && !b.State.Up() {
			order = append(order, i)
		}
	}
	for n, i := range order {
		b := &boxes[i]
		if n >= MaxEgressReads {
			b.DeniedErr = fmt.Sprintf("not read: more than %d broker boxes on the host (corral --host %s egress %s)", MaxEgressReads, h.Name, b.Name)
			continue
		}
		if ctx.Err() != nil {
			b.DeniedErr = "not read: the host's time ran out"
			continue
		}
		out, err := c.Runner.Output(ctx, h, []string{"egress", "--json", "--since", deniedSince, "--", b.Name}, MaxEgressBytes)
		if err == nil {
			b.Denied, err = DecodeEgress(out, b.Name)
		}
		if err != nil {
			b.DeniedErr = Reason(err)
		}
	}
	return boxes, nil
}

// Reason is err as one line for the menu: its first line, made safe by
// core/display and cut at maxReason runes. err's text holds what the host
// printed (ssh's and corral's stderr, quoted by core/remote); it is made
// safe here all the same.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	return display.Text(s, maxReason)
}

// Why is the result's error as one line (Reason) without the "host NAME: "
// or "host NAME (URL): " it starts with: the menu shows it beside the
// host's name already. "" when the host was read.
func (r Result) Why() string {
	s := Reason(r.Err)
	for _, p := range []string{"host " + r.Host + ": ", "host " + r.Host + " (" + r.URL + "): "} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest
		}
	}
	return s
}

// Timeouts of actions: a start boots a VM (minutes under TCG); the rest
// write a file or stop a VM.
const (
	StartTimeout  = 15 * time.Minute
	ActionTimeout = 2 * time.Minute
)

// Start starts box on h: `corral start -- BOX` there.
func (c Client) Start(ctx context.Context, h remote.Host, box string) error {
	return c.act(ctx, h, StartTimeout, box, "start", "--", box)
}

// Stop stops box on h: `corral stop -- BOX` there.
func (c Client) Stop(ctx context.Context, h remote.Host, box string) error {
	return c.act(ctx, h, ActionTimeout, box, "stop", "--", box)
}

// Allow adds entry to box's allow-list on h for scope (for is the length
// of approval.ScopeFor): `corral allow --SCOPE -- BOX ENTRY` there, which
// runs the host's own grant check and writes the host's approvals. entry
// must be an allow-list entry in its canonical form (egress.ParseAllowEntry):
// what the user picked is exactly what is sent. The grant check
// (config.CheckGrant) runs here first, as for a box on this machine.
func (c Client) Allow(ctx context.Context, h remote.Host, box, entry string, scope approval.Scope, dur time.Duration) error {
	e, err := egress.ParseAllowEntry(entry)
	if err != nil || e.String() != entry || strings.HasPrefix(entry, "-") {
		return fmt.Errorf("allowing %s for box %s on host %s: not an allow-list entry in canonical form", display.Text(entry, 80), display.Text(box, 0), h.Name)
	}
	// The one grant check, here as for a box on this machine (the host's
	// corral runs it again): what no path of corral grants is not sent.
	if v := config.CheckGrant("egress", entry, config.GrantContext{}); v.Risk == config.RiskRefused {
		return fmt.Errorf("allowing %s for box %s on host %s: %s", entry, box, h.Name, v.Why)
	}
	if e.IsRange() {
		return fmt.Errorf("allowing %s for box %s on host %s: an address range is not an approval (it belongs in the host's trusted layer, egress = [...])", entry, box, h.Name)
	}
	args := []string{"allow"}
	switch scope {
	case approval.ScopeAlways:
		args = append(args, "--always")
	case approval.ScopeSession:
		args = append(args, "--session")
	case approval.ScopeOnce:
		args = append(args, "--once")
	case approval.ScopeFor:
		if err := approval.CheckFor(dur); err != nil {
			return err
		}
		args = append(args, "--for", dur.String())
	default:
		return fmt.Errorf("allowing %s for box %s on host %s: unknown scope %q", entry, box, h.Name, scope)
	}
	return c.act(ctx, h, ActionTimeout, box, append(args, "--", box, entry)...)
}

// act checks the box's name, then runs one command on h (the version
// check first) under its own deadline.
func (c Client) act(ctx context.Context, h remote.Host, timeout time.Duration, box string, args ...string) error {
	if err := project.CheckName(box, ""); err != nil {
		return fmt.Errorf("host %s: %w", h.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.Runner.CheckVersion(ctx, h)
	if err == nil {
		// The output is read and dropped (capped): what matters is the
		// exit code, and stderr's reason when it fails.
		_, err = c.Runner.Output(ctx, h, args, MaxListBytes)
		if errors.Is(err, remote.ErrOutputTooLarge) {
			err = nil // it exited 0
		}
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("host %s: corral %s %s: no answer within %s", h.Name, args[0], box, timeout)
	}
	return err
}

// usablePath reports whether p (a project path on the host) may be shown
// and passed back as -C: absolute, clean, bounded, no control character.
func usablePath(p string) bool {
	if p == "" || len(p) > maxPath || !strings.HasPrefix(p, "/") || filepath.Clean(p) != p {
		return false
	}
	return !strings.ContainsFunc(p, display.Unsafe)
}
