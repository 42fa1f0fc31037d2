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
	_ Store  = (*Keychain)(nil)
	_ Prober = (*Keychain)(nil)
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

// Probe implements Prober: it reads the item with user interaction
// disallowed (SecKeychainSetUserInteractionAllowed, process-wide, so
// probes are serialised and interaction is allowed again after each), and
// drops the value.
func (k *Keychain) Probe(ctx context.Context, service, account string) (Access, error) {
	var a Access
	err := k.run(ctx, service, account, func() error {
		probeMu.Lock()
		defer probeMu.Unlock()
		setInteraction(false)
		defer setInteraction(true)
		q := query(service, account)
		q.SetMatchLimit(keychain.MatchLimitOne)
		q.SetReturnData(true)
		res, err := keychain.QueryItem(q)
		for _, r := range res {
			clear(r.Data)
		}
		status := 0
		var kerr keychain.Error
		switch {
		case errors.As(err, &kerr):
			status = int(kerr)
		case err != nil:
			return err
		}
		a = probeAccess(status, len(res) > 0)
		if a == AccessUnknown {
			return k.fail("probing keychain", service, account, err)
		}
		return nil
	})
	return a, err
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
