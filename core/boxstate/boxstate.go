// Package boxstate is a box's one state machine: the states a box can be in,
// the events that move it, and the one table that says which event moves
// which state where. The lifecycle (core/box) asks it what a box is and
// whether an operation applies; `corral ls`, `corral info` and the menu show
// its states. It has no behaviour beyond that and imports nothing of corral's
// but the Lima status it is derived from, so the app and the broker can use
// it without the lifecycle.
package boxstate

import "github.com/corral-dev/corral/core/lima"

// State is a box's state.
type State string

// The states. Their strings are what `corral ls` and `corral info` print.
const (
	// Missing: corral has the box's metadata (or nothing) but Lima has no
	// instance.
	Missing State = "Missing"
	// Provisioning: a create or rebuild runs (or was interrupted: the next
	// up cleans it up and creates the box again).
	Provisioning State = "Provisioning"
	// Failed: the VM runs but the last start's provisioning failed;
	// sessions refuse the box until a start provisions it cleanly.
	Failed State = "Failed"
	// Stopped: the VM is off; the next start boots it.
	Stopped State = "Stopped"
	// Saved: the VM is off with its state saved in its disk; the next
	// start resumes it.
	Saved State = "Saved"
	// Starting and Stopping: an operation on the box is under way (only
	// the process doing it knows; the app shows it).
	Starting State = "Starting"
	Stopping State = "Stopping"
	// Running: the VM runs and was provisioned cleanly.
	Running State = "Running"
	// Broken: Lima's processes disagree (a host agent without its VM
	// driver, or the other way round).
	Broken State = "Broken"
)

// All lists every state, in the order of a box's life.
var All = []State{Missing, Provisioning, Failed, Stopped, Saved, Starting, Stopping, Running, Broken}

// Event is something that happens to a box.
type Event string

// The events.
const (
	Create          Event = "create"           // corral up of a box without an instance, or rebuild
	Provisioned     Event = "provisioned"      // the create or start provisioned the box cleanly
	ProvisionFailed Event = "provision-failed" // a provision script failed in the box
	Start           Event = "start"            // corral start/up of a box that is not running
	Stop            Event = "stop"             // corral stop: the VM halts
	Save            Event = "save"             // corral stop --save: the VM's state is saved, then it halts
	Halted          Event = "halted"           // the VM is off (after stop, or Lima's start failed)
	SavedState      Event = "saved"            // the VM is off with its state saved
	Break           Event = "break"            // Lima's processes were found to disagree
	Remove          Event = "remove"           // corral rm: instance and metadata deleted
)

// table is the transition table: table[from][event] is the state the event
// moves a box in state from to. An event a state does not list does not
// apply to it (the lifecycle refuses it or has nothing to do).
var table = map[State]map[Event]State{
	Missing: {Create: Provisioning, Remove: Missing},
	// An interrupted create is recovered by the next up: it creates again.
	Provisioning: {Provisioned: Running, ProvisionFailed: Failed, Create: Provisioning, Halted: Stopped, Break: Broken, Remove: Missing},
	// A failed box is refused by sessions and by up: stop it (then start
	// provisions again) or rebuild it.
	Failed:  {Stop: Stopping, Create: Provisioning, Break: Broken},
	Stopped: {Start: Starting, Create: Provisioning, Remove: Missing},
	// Stopping a saved box drops its saved state: the next start boots.
	Saved:    {Start: Starting, Stop: Stopped, Create: Provisioning, Remove: Missing},
	Starting: {Provisioned: Running, ProvisionFailed: Failed, Halted: Stopped, Break: Broken},
	Stopping: {Halted: Stopped, SavedState: Saved, Break: Broken},
	Running:  {Stop: Stopping, Save: Stopping, Create: Provisioning, Break: Broken},
	Broken:   {Stop: Stopping, Create: Provisioning},
}

// Next is the state event moves s to; ok is false when the event does not
// apply to s.
func (s State) Next(e Event) (next State, ok bool) {
	next, ok = table[s][e]
	return next, ok
}

// Can says whether event e applies to a box in state s.
func (s State) Can(e Event) bool {
	_, ok := s.Next(e)
	return ok
}

// Up says whether the box's VM runs (sessions, the guest and the broker's
// work need it): Running, and Failed, whose VM runs but refuses sessions.
func (s State) Up() bool { return s == Running || s == Failed }

// Busy says whether an operation on the box is under way.
func (s State) Busy() bool { return s == Provisioning || s == Starting || s == Stopping }

// Facts are what a box's state is derived from: what Lima's processes say
// (FromLima) and corral's metadata.
type Facts struct {
	// VM is the instance's state as Lima's processes show it: Missing,
	// Stopped, Running or Broken (FromLima).
	VM State
	// Provisioning, ProvisionFailed and Saved are the metadata's marks
	// (boxmeta.Meta's Provisioning, ProvisionError and Saved).
	Provisioning, ProvisionFailed, Saved bool
}

// Of is the state the facts show. A create in progress wins over what Lima
// says; a failed provisioning marks a running VM only; a saved state marks a
// stopped VM only (a running box's mark is stale: it resumed).
func Of(f Facts) State {
	switch {
	case f.Provisioning:
		return Provisioning
	case f.VM == Running && f.ProvisionFailed:
		return Failed
	case f.VM == Stopped && f.Saved:
		return Saved
	}
	return f.VM
}

// FromLima is the state of a Lima instance status alone (read from its
// directory without limactl: lima.ReadInstanceDir): Running, Stopped or
// Broken, and Missing when Lima has no instance (lima.StatusUnknown).
// Lima's other statuses (Uninitialized, Installing) are instances corral
// did not finish making: Broken.
func FromLima(st lima.Status) State {
	switch st {
	case lima.StatusRunning:
		return Running
	case lima.StatusStopped:
		return Stopped
	case lima.StatusUnknown:
		return Missing
	}
	return Broken
}
