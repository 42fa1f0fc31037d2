package secret

// Type-checked on Linux (darwincheck); not yet run on macOS.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keybase/go-keychain"
)

// probeMu serialises Probe: the interaction setting is process-wide.
var probeMu sync.Mutex

// Default returns the platform secret store: the login keychain on macOS.
func Default() Store { return &Keychain{} }

// Keychain is the macOS Store: generic passwords in the default keychain,
// looked up by kSecAttrService and kSecAttrAccount. Security framework calls
// cannot be cancelled, so each runs on its own goroutine and a call that
// outlives the deadline is abandoned (it finishes in the background) and
// reported as ErrUnavailable. A read may raise the Keychain's "allow
// access" dialog: sessions with a person at the terminal pass a context
// bounded by InteractiveTimeout (see Interactive), and keychainError gives
// Deny its own message.
type Keychain struct {
	// Timeout bounds calls whose context has no deadline; 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

var (
	_ Store        = (*Keychain)(nil)
	_ Prober       = (*Keychain)(nil)
	_ silentGetter = (*Keychain)(nil)
)

// run calls f on a goroutine, bounded by ctx.
func (k *Keychain) run(ctx context.Context, service, account string, f func() error) error {
	ctx, cancel := withTimeout(ctx, k.Timeout)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return Unavailable(service, account, fmt.Errorf("keychain: %w", ctx.Err()), keychainTimeoutHint(service, account))
	}
}

func (k *Keychain) fail(op, service, account string, err error) error {
	var kerr keychain.Error
	if errors.As(err, &kerr) {
		if mapped, ok := keychainError(op, service, account, int(kerr), err); ok {
			return mapped
		}
	}
	return fmt.Errorf("%s for service %q account %q: %w", op, service, account, err)
}

func query(service, account string) keychain.Item {
	q := keychain.NewItem()
	q.SetSecClass(keychain.SecClassGenericPassword)
	q.SetService(service)
	q.SetAccount(account)
	return q
}

// Get implements Store.
func (k *Keychain) Get(ctx context.Context, service, account string) (string, error) {
	var v string
	err := k.run(ctx, service, account, func() error {
		q := query(service, account)
		q.SetMatchLimit(keychain.MatchLimitOne)
		q.SetReturnData(true)
		res, err := keychain.QueryItem(q)
		if err != nil {
			return k.fail("reading keychain", service, account, err)
		}
		// QueryItem reports a missing item as no results; an empty
		// password is one result with empty Data.
		if len(res) == 0 {
			return NotFound(service, account)
		}
		v = string(res[0].Data)
		return nil
	})
	return v, err
}

// Set implements Store. corral creates the item, so its access list
// trusts corral and reading it never prompts: an existing item is deleted
// and added again (setOwned), since updating it would keep the access list
// of whoever made it. go-keychain v0.0.1 cannot set an access list
// (SetAccess was removed upstream), so re-creating is the only way.
// Deleting an item made by another program may itself raise the dialog
// once (UNVERIFIED): secret set runs at a terminal, with time to answer.
func (k *Keychain) Set(ctx context.Context, service, account, value string) error {
	return k.run(ctx, service, account, func() error {
		add := func() error {
			item := query(service, account)
			item.SetLabel(service)
			item.SetData([]byte(value))
			return keychain.AddItem(item)
		}
		del := func() error {
			if err := keychain.DeleteItem(query(service, account)); err != nil {
				return k.fail("deleting the existing keychain item", service, account, err)
			}
			return nil
		}
		dup := func(err error) bool { return errors.Is(err, keychain.ErrorDuplicateItem) }
		if err := setOwned(add, del, dup); err != nil {
			return k.fail("writing keychain", service, account, err)
		}
		return nil
	})
}

// readNoUI reads the item with user interaction disallowed
// (SecKeychainSetUserInteractionAllowed, process-wide: calls are
// serialised, and interaction is allowed again after each). status is
// the Security framework's answer (0 when it found the item or none);
// err is set for a failure that carries no status.
func readNoUI(service, account string) (status int, res []keychain.QueryResult, err error) {
	probeMu.Lock()
	defer probeMu.Unlock()
	setInteraction(false)
	defer setInteraction(true)
	q := query(service, account)
	q.SetMatchLimit(keychain.MatchLimitOne)
	q.SetReturnData(true)
	res, err = keychain.QueryItem(q)
	var kerr keychain.Error
	if errors.As(err, &kerr) {
		return int(kerr), res, nil
	}
	return 0, res, err
}

// Probe implements Prober: it reads the item with user interaction
// disallowed (readNoUI) and drops the value.
func (k *Keychain) Probe(ctx context.Context, service, account string) (Access, error) {
	var a Access
	err := k.run(ctx, service, account, func() error {
		status, res, err := readNoUI(service, account)
		for _, r := range res {
			clear(r.Data)
		}
		if err != nil {
			return err
		}
		a = probeAccess(status, len(res) > 0)
		if a == AccessUnknown {
			return k.fail("probing keychain", service, account, keychain.Error(status))
		}
		return nil
	})
	return a, err
}

// GetSilent is Get with every dialog refused (readNoUI), for the broker
// and the laptop's relay (Silent): an item that needs the "allow access"
// dialog is NeedsDialog at once, never a dialog nobody watches. While it
// runs, interaction is off for the whole process: the broker reads only
// this way, and the relay's process has finished its terminal reads
// (Decide) before the relay serves.
func (k *Keychain) GetSilent(ctx context.Context, service, account string) (string, error) {
	var v string
	err := k.run(ctx, service, account, func() error {
		status, res, err := readNoUI(service, account)
		if err != nil {
			return k.fail("reading keychain", service, account, err)
		}
		switch probeAccess(status, len(res) > 0) {
		case AccessReadable:
			v = string(res[0].Data)
			return nil
		case AccessMissing:
			return NotFound(service, account)
		case AccessPrompts:
			return NeedsDialog(service, account)
		}
		return k.fail("reading keychain", service, account, keychain.Error(status))
	})
	return v, err
}

// Delete implements Store.
func (k *Keychain) Delete(ctx context.Context, service, account string) error {
	return k.run(ctx, service, account, func() error {
		if err := keychain.DeleteItem(query(service, account)); err != nil {
			return k.fail("deleting from keychain", service, account, err)
		}
		return nil
	})
}
