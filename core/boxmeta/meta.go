// Package boxmeta is a box's identity and what corral records of it: the
// metadata file (~/.corral/boxes/<box>.json: read strictly, capped, written
// atomically), which box a command means (Locate: the one named, else the
// current project's), and a project resolved to its box and effective
// config (Resolve). It knows nothing of Lima's processes, brokers or
// sessions, so the broker, the qemu wrapper and the app read a box without
// importing the lifecycle (core/box).
package boxmeta

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/agentstate"
	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted"
)

// ErrNotFound means a box has no metadata: corral never created it.
var ErrNotFound = errors.New("no such box")

// Meta is a box's metadata, ~/.corral/boxes/<box>.json.
type Meta struct {
	Name         string    `json:"name"`
	Project      string    `json:"project"`
	Created      time.Time `json:"created"`
	TemplateHash string    `json:"template_hash"`
	Golden       string    `json:"golden,omitempty"` // golden instance it was cloned from
	BrokerPort   int       `json:"broker_port"`
	BrokerPID    int       `json:"broker_pid,omitempty"`
	// BrokerStart is the broker process's start time (procinfo.Identity),
	// so that a reused PID is never taken for the broker.
	BrokerStart int64          `json:"broker_start,omitempty"`
	Network     config.Network `json:"network"`
	MemoryCap   uint64         `json:"memory_cap"`
	CPUs        int            `json:"cpus"`
	VMType      config.VMType  `json:"vm_type"`
	IdleStop    string         `json:"idle_stop"`
	// IdleAction is the idle_action last followed: what Sweep does to the
	// box when it is idle ("" is config.IdleActionStop).
	IdleAction config.IdleAction `json:"idle_action,omitempty"`
	StopOnExit bool              `json:"stop_on_exit,omitempty"`
	// Saved is set while the box's VM state is saved in its disk (Save):
	// the next start resumes it instead of booting.
	Saved *Saved `json:"saved,omitempty"`
	// AgentState and Source are the box's agent_state and source when it
	// was created ("" for boxes from before they were recorded).
	AgentState agentstate.Mode `json:"agent_state,omitempty"`
	Source     config.Source   `json:"source,omitempty"`
	// GitShadowOff is the trusted opt-out (git_shadow = false): the box may
	// write the project's git directory. The zero value protects it, so
	// metadata from before the setting existed fails closed.
	GitShadowOff bool `json:"git_shadow_off,omitempty"`
	// Hide is the hide key when the box was created (its template has the
	// same list): on Linux qemu the wrapper covers each path for the VM
	// (qemuwrap.NewPlan), so not even guest root reads what the host has there.
	Hide []string `json:"hide,omitempty"`
	// MountType is the project mount's type as last started; with
	// reverse-sshfs the host's sftp-server, not qemu, serves the project.
	MountType config.MountType `json:"mount_type,omitempty"`
	// Ports are the forwards in force: the ports key as applied at the
	// last start, plus those `corral port` added to the running box.
	Ports []config.Port `json:"ports,omitempty"`
	// HostPorts are the host loopback ports the box may reach (host_ports,
	// broker mode), as applied at the last start: its qemu has a guestfwd
	// for each (see qemuwrap.Plan), or on vz its guest's nftables open them.
	HostPorts []int `json:"host_ports,omitempty"`
	// LastActivity is when the box was last brought up; sessions record
	// theirs in run/sessions (see box.Service.LiveSessions).
	LastActivity time.Time `json:"last_activity"`
	// Provisioning is set while a create or rebuild runs; a box left with
	// it (ctrl-C, crash) is recovered by the next up.
	Provisioning bool `json:"provisioning,omitempty"`
	// ProvisionError is set when the last start's provisioning failed;
	// sessions refuse the box until a start provisions it cleanly.
	ProvisionError string `json:"provision_error,omitempty"`
}

// Saved says that a box's VM state is saved in its disk.
type Saved struct {
	Tag string    `json:"tag"`
	At  time.Time `json:"at"`
	// Balloon says the saved VM had a virtio balloon (its qemu command
	// line, qemu.HasBalloon): the resume must have one too, as a saved
	// state loads only into the machine that made it. A state saved
	// before corral added the balloon has false and resumes without one;
	// the next boot gets it.
	Balloon bool `json:"balloon,omitempty"`
	// Reason is why the box was saved: "" by `corral stop --save` or
	// idle_action = "save", SavedLowMemory when the host ran short of
	// memory (the menu and ls say so).
	Reason string `json:"reason,omitempty"`
}

// SavedLowMemory is Saved.Reason of a box the idle sweep saved because
// the host's available memory fell under save_when_free_below.
const SavedLowMemory = "low-memory"

// StateOf is the box's state in the machine (boxstate.Of) when Lima's
// processes show vm.
func (m Meta) StateOf(vm boxstate.State) boxstate.State {
	return boxstate.Of(boxstate.Facts{VM: vm, Provisioning: m.Provisioning,
		ProvisionFailed: m.ProvisionError != "", Saved: m.Saved != nil})
}

// LockedStateOf is the box's state for an operation that holds the box's
// lock. A create holds it too, so a Provisioning mark seen here is a create
// that was interrupted, and what its VM shows decides.
func (m Meta) LockedStateOf(vm boxstate.State) boxstate.State {
	m.Provisioning = false
	return m.StateOf(vm)
}

// maxMeta caps a box's metadata file: corral writes a few KiB.
const maxMeta = 256 << 10

// Error is a box's metadata file that corral cannot use: not a regular
// file, larger than the cap, or not metadata. Commands about that box
// fail with it; everything else (the sweep, ls, other boxes) skips the box
// and warns.
type Error struct {
	Box  string
	Path string
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("reading metadata of box %s (%s): %v", e.Box, e.Path, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// Hint says what to do: the file is corral's own.
func (e *Error) Hint() string {
	return fmt.Sprintf("corral writes this file: move it away or delete it; corral rm -f %s removes the box", e.Box)
}

var _ interface{ Hint() string } = (*Error)(nil)

// Errors returns the errors of type Error in err (List joins one per box).
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(e error) {
		var me *Error
		switch u := e.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		default:
			if errors.As(e, &me) {
				out = append(out, me)
			}
		}
	}
	walk(err)
	return out
}

// Read reads a box's metadata. The file is read as a regular file of
// at most 256 KiB without blocking (core/untrusted), so a FIFO or
// /dev/zero in its place is an Error at once; errors quote at most a
// short, escaped part of the content.
func Read(l paths.Layout, box string) (Meta, error) {
	path := l.BoxMeta(box)
	b, err := untrusted.ReadJSON(path, untrusted.State(maxMeta))
	if errors.Is(err, fs.ErrNotExist) {
		return Meta{}, fmt.Errorf("%w: %s", ErrNotFound, box)
	}
	if err != nil {
		var fe *untrusted.FileError
		if errors.As(err, &fe) {
			err = errors.New(fe.What)
		}
		return Meta{}, &Error{Box: box, Path: path, Err: err}
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		// A decode error can quote a value (a bad time): cut and escape it.
		return Meta{}, &Error{Box: box, Path: path, Err: errors.New(display.Text(err.Error(), 200))}
	}
	return m, nil
}

// Write writes a box's metadata atomically.
func Write(l paths.Layout, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding metadata of box %s: %w", m.Name, err)
	}
	return atomicfile.WriteFile(l.BoxMeta(m.Name), append(b, '\n'), atomicfile.FileMode)
}

// List reads the metadata of every box, sorted by name. Unreadable
// files are returned as errors alongside the rest (one *Error each,
// joined: see Errors), so that one broken file never hides the other
// boxes.
func List(l paths.Layout) ([]Meta, error) {
	ents, err := os.ReadDir(l.BoxesDir())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing boxes: %w", err)
	}
	var out []Meta
	var errs []error
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || strings.HasPrefix(name, ".") {
			continue
		}
		m, err := Read(l, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, errors.Join(errs...)
}

// Remove deletes a box's metadata.
func Remove(l paths.Layout, box string) error {
	err := os.Remove(l.BoxMeta(box))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing metadata of box %s: %w", box, err)
	}
	return nil
}
