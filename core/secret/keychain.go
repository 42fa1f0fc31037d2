package secret

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// InteractiveTimeout bounds a call that a person can answer: a macOS
// Keychain "corral wants to use your confidential information" dialog, or
// an unlock prompt. Items made by `security add-generic-password` trust
// only /usr/bin/security, so corral's first read of one raises that dialog,
// and DefaultTimeout would give up while it is still on screen.
const InteractiveTimeout = 2 * time.Minute

// Interactive bounds ctx by InteractiveTimeout when a person is there to
// answer a prompt (a session in a terminal); otherwise ctx is returned as
// it is and each call gets DefaultTimeout.
func Interactive(ctx context.Context, person bool) (context.Context, context.CancelFunc) {
	if !person {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, InteractiveTimeout)
}

// Security framework result codes corral tells apart (OSStatus, SecBase.h
// and MacErrors.h).
const (
	errSecUserCanceled          = -128
	errSecNotAvailable          = -25291
	errSecAuthFailed            = -25293
	errSecNoSuchKeychain        = -25294
	errSecInvalidKeychain       = -25295
	errSecItemNotFound          = -25300
	errSecInteractionNotAllowed = -25308
)

// errDenied is the cause when the user chose Deny in the Keychain dialog.
var errDenied = errors.New("access was denied in the Keychain dialog")

// keychainError maps a Security framework status of op on (service,
// account) to corral's errors; every hint names corral secret set, which
// makes corral the item's creator, so reading it never prompts. ok is
// false for a status it does not know.
func keychainError(op, service, account string, status int, cause error) (err error, ok bool) {
	set := fmt.Sprintf("corral secret set --service %s --account %s", service, account)
	switch status {
	case errSecItemNotFound:
		return NotFound(service, account), true
	case errSecUserCanceled:
		return Unavailable(service, account, fmt.Errorf("%s: %w", op, errDenied),
			"to let corral read it, run again and choose Always Allow; to stop the dialog, store the secret again with "+set+" (corral then owns the item)"), true
	case errSecAuthFailed:
		return Unavailable(service, account, fmt.Errorf("%s: %w", op, cause),
			"the keychain password was not accepted; run again and enter your login password, or store the secret with "+set), true
	case errSecInteractionNotAllowed, errSecNotAvailable, errSecNoSuchKeychain, errSecInvalidKeychain:
		return Unavailable(service, account, fmt.Errorf("%s: %w", op, cause),
			"unlock your login keychain (Keychain Access, or: security unlock-keychain), then retry"), true
	}
	return nil, false
}

// keychainTimeoutHint is the hint when the keychain did not answer in
// time: the usual reason is a dialog nobody has answered yet.
func keychainTimeoutHint(service, account string) string {
	return fmt.Sprintf("a Keychain dialog may be waiting for you: choose Always Allow and run again, or store the secret with corral secret set --service %s --account %s so that corral is not asked", service, account)
}

// Access is what reading an item would do, found without asking anyone.
type Access int

const (
	AccessUnknown  Access = iota // the store could not tell
	AccessReadable               // read without a dialog
	AccessPrompts                // a dialog would ask (allow access, or unlock)
	AccessMissing                // no such item
)

func (a Access) String() string {
	switch a {
	case AccessReadable:
		return "readable"
	case AccessPrompts:
		return "prompts"
	case AccessMissing:
		return "missing"
	}
	return "unknown"
}

// Prober is a Store that can tell what reading an item would do without
// raising a dialog (`corral doctor`).
type Prober interface {
	Probe(ctx context.Context, service, account string) (Access, error)
}

// probeAccess classifies the Security framework's answer to a read made
// with user interaction disallowed: status 0 with an item is readable;
// errSecInteractionNotAllowed means the read needed a dialog (an "allow
// access" question, or an unlock of a locked keychain).
func probeAccess(status int, found bool) Access {
	switch {
	case status == 0 && found:
		return AccessReadable
	case status == 0, status == errSecItemNotFound:
		return AccessMissing
	case status == errSecInteractionNotAllowed:
		return AccessPrompts
	}
	return AccessUnknown
}
