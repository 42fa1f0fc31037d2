package secret

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// One Keychain decision per item (docs/PLATFORMS.md, "Keychain"). On macOS
// the first read of an item another program made (`security
// add-generic-password`) raises the Keychain's "allow access" dialog with
// three buttons: Always Allow (corral may read it from now on, without a
// dialog), Allow (this one read), Deny. The broker reads brokered items
// in the background while a session waits for an answer, so the rule is:
//
//   - the dialog comes once, at the terminal, before the agent starts
//     (Decide), with a line first saying which button keeps it from
//     coming back;
//   - the broker never raises it (Silent): an item it cannot read without
//     the dialog is refused at once, and the agent's request is answered
//     with an error naming the item and `corral secret set`.
//
// What the person decided reaches the broker through the Keychain itself:
// Always Allow makes the item silently readable, so the broker reads it;
// after Allow or Deny it still needs the dialog, so the broker refuses it
// at once instead of asking again.

// ItemState is what Decide found out about one item.
type ItemState int

const (
	ItemUnknown     ItemState = iota // the store could not tell; read as before
	ItemSilent                       // read without a dialog: corral made it, or Always Allow was chosen
	ItemMissing                      // no such item
	ItemAllowedOnce                  // Allow: this read went through; the next one (the broker's) would ask again
	ItemDenied                       // Deny, no answer in time, or another failure
)

func (s ItemState) String() string {
	switch s {
	case ItemSilent:
		return "silent"
	case ItemMissing:
		return "missing"
	case ItemAllowedOnce:
		return "allowed-once"
	case ItemDenied:
		return "denied"
	}
	return "unknown"
}

// Decision is one item's state after Decide, with the error of its read
// (nil unless Denied or Unknown).
type Decision struct {
	Ref   Ref
	State ItemState
	Err   error
}

// Decide settles each item once, with a person at the terminal (ctx from
// Interactive): an item that is silently readable or missing is left
// alone; one whose read raises the dialog gets a line on w first (which
// button to press, and why), then the read; afterwards a second silent
// look tells Always Allow from Allow, and w gets a line for every outcome
// the broker will refuse. A store that cannot tell (no Prober, or a probe
// that fails) is read as before: the dialog may come, with the line
// first. Values are dropped.
func Decide(ctx context.Context, s Store, items []Ref, w io.Writer) []Decision {
	if w == nil {
		w = io.Discard
	}
	p, _ := s.(Prober)
	seen := map[Ref]bool{}
	var out []Decision
	for _, it := range items {
		if seen[it] {
			continue
		}
		seen[it] = true
		out = append(out, decideOne(ctx, s, p, it, w))
	}
	return out
}

func decideOne(ctx context.Context, s Store, p Prober, it Ref, w io.Writer) Decision {
	d := Decision{Ref: it}
	before := AccessUnknown
	if p != nil {
		before, _ = p.Probe(ctx, it.Service, it.Account)
	}
	switch before {
	case AccessReadable:
		d.State = ItemSilent
		return d
	case AccessMissing:
		d.State = ItemMissing
		return d
	case AccessPrompts:
		fmt.Fprintln(w, beforeDialogLine(it))
	}
	_, err := s.Get(ctx, it.Service, it.Account)
	switch {
	case errors.Is(err, ErrNotFound):
		d.State = ItemMissing
		return d
	case err != nil:
		d.State, d.Err = ItemDenied, err
		if before == AccessPrompts {
			fmt.Fprintln(w, deniedLine(it))
		}
		return d
	}
	if p == nil || before != AccessPrompts {
		// Nothing to compare with: a store that cannot tell, or a read
		// that needed no dialog.
		d.State = ItemSilent
		if before == AccessUnknown && p != nil {
			d.State = ItemUnknown
		}
		return d
	}
	after, _ := p.Probe(ctx, it.Service, it.Account)
	if after == AccessReadable {
		d.State = ItemSilent // Always Allow
		return d
	}
	d.State = ItemAllowedOnce
	fmt.Fprintln(w, allowedOnceLine(it))
	return d
}

func setCommand(it Ref) string {
	return fmt.Sprintf("corral secret set --service %s --account %s", it.Service, it.Account)
}

// beforeDialogLine is printed just before a read that raises the dialog.
func beforeDialogLine(it Ref) string {
	return fmt.Sprintf("corral: macOS will ask whether corral may read the keychain item %q (account %q), which the box's broker uses: choose \"Always Allow\" "+
		"(\"Allow\" lets only this read through, and the broker, which never shows the dialog, then refuses the agent's requests that need it)", it.Service, it.Account)
}

// allowedOnceLine follows a read answered with Allow.
func allowedOnceLine(it Ref) string {
	return fmt.Sprintf("corral: \"Allow\" was chosen for the keychain item %q (account %q): the broker cannot read it without the dialog and will refuse the agent's requests that need it; "+
		"to settle it: %s (corral then owns the item), or choose \"Always Allow\" next time", it.Service, it.Account, setCommand(it))
}

// deniedLine follows a read answered with Deny (or not answered).
func deniedLine(it Ref) string {
	return fmt.Sprintf("corral: the keychain item %q (account %q) was not read: the broker will refuse the agent's requests that need it; to let corral read it: %s",
		it.Service, it.Account, setCommand(it))
}

// errNeedsDialog is the cause when an item can be read only through the
// Keychain's dialog and the reader may not raise it.
var errNeedsDialog = errors.New("reading it needs a dialog (the Keychain's \"allow access\", or an unlock), which the broker never raises")

// NeedsDialog is the error Silent returns for an item it cannot read
// without the dialog: ErrUnavailable (so secret.Shared remembers it
// briefly), with a hint and an AgentText naming `corral secret set` and
// the item.
func NeedsDialog(service, account string) error {
	it := Ref{Service: service, Account: account}
	return &Error{Kind: ErrUnavailable, Service: service, Account: account, Cause: errNeedsDialog,
		hint: fmt.Sprintf("run %s (corral then owns the item and reads it without asking), or start a session in a terminal and choose \"Always Allow\"", setCommand(it)),
		agent: fmt.Sprintf("the keychain item %q (account %q) on the host needs a dialog (the Keychain's \"allow access\", or an unlock), which the broker never raises; "+
			"on that machine run: %s (or start a session there in a terminal and choose \"Always Allow\")", service, account, setCommand(it))}
}

// silentGetter is a Store that can read an item with every dialog
// refused (macOS: Keychain.GetSilent).
type silentGetter interface {
	GetSilent(ctx context.Context, service, account string) (string, error)
}

// Silent wraps s for a reader with nobody to answer a dialog (the broker,
// the laptop's credential relay): Get never raises one. An item that
// needs the dialog is NeedsDialog at once. A store that reads silently
// itself does (macOS); one that can only probe is probed first (Linux:
// an item in a locked collection needs the unlock prompt); one that can
// do neither is read as it is (tests' stores, other platforms).
func Silent(s Store) Store { return silent{s} }

type silent struct{ Store }

func (s silent) Get(ctx context.Context, service, account string) (string, error) {
	if g, ok := s.Store.(silentGetter); ok {
		return g.GetSilent(ctx, service, account)
	}
	if p, ok := s.Store.(Prober); ok {
		a, err := p.Probe(ctx, service, account)
		switch {
		case err != nil:
			return "", err
		case a == AccessMissing:
			return "", NotFound(service, account)
		case a == AccessPrompts:
			return "", NeedsDialog(service, account)
		}
	}
	return s.Store.Get(ctx, service, account)
}
