package secret

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultRefusalTTL is how long Shared remembers that an item could not be
// read (Deny, a dialog nobody answered, a locked keychain).
const DefaultRefusalTTL = 30 * time.Second

// Shared is a Store for a long-running reader with no terminal, such as
// the broker, which reads an item when a request needs it. On macOS the
// first read of an item made by another program raises the Keychain's
// "allow access" dialog, and the call blocks until someone answers. So:
//
//   - one read per item at a time: a Get of an item already being read
//     waits for that read instead of starting another (a second dialog);
//   - the read itself is bounded by InteractiveTimeout, not by the first
//     caller's deadline: a caller whose own deadline passes gets
//     ErrUnavailable with the "dialog may be waiting" hint, while the read
//     goes on and a later Get joins it;
//   - a refusal (any ErrUnavailable: Deny, no answer, locked) is returned
//     without asking again for RefusalTTL, so a retrying client does not
//     raise the dialog again at once. Set and Delete forget it.
//
// Values are never cached: every Get after a read has finished reads again.
type Shared struct {
	Store Store
	// RefusalTTL: 0 means DefaultRefusalTTL.
	RefusalTTL time.Duration
	// ReadTimeout bounds each shared read: 0 means InteractiveTimeout.
	ReadTimeout time.Duration
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	flights map[item]*flight
	refused map[item]refusal
}

var _ Store = (*Shared)(nil)

type item struct{ service, account string }

type flight struct {
	done  chan struct{}
	value string
	err   error
}

type refusal struct {
	err   error
	until time.Time
}

// NewShared wraps s.
func NewShared(s Store) *Shared { return &Shared{Store: s} }

func (s *Shared) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Get implements Store.
func (s *Shared) Get(ctx context.Context, service, account string) (string, error) {
	k := item{service, account}
	s.mu.Lock()
	if r, ok := s.refused[k]; ok {
		if s.now().Before(r.until) {
			s.mu.Unlock()
			return "", r.err
		}
		delete(s.refused, k)
	}
	f, ok := s.flights[k]
	if !ok {
		f = &flight{done: make(chan struct{})}
		if s.flights == nil {
			s.flights = map[item]*flight{}
		}
		s.flights[k] = f
		go s.read(context.WithoutCancel(ctx), k, f)
	}
	s.mu.Unlock()

	// The caller's own bound: DefaultTimeout when it set none.
	ctx, cancel := withTimeout(ctx, 0)
	defer cancel()
	select {
	case <-f.done:
		return f.value, f.err
	case <-ctx.Done():
		return "", Unavailable(service, account, fmt.Errorf("keychain: %w", ctx.Err()), keychainTimeoutHint(service, account))
	}
}

// read is the one read of k; it ends the flight and records a refusal.
func (s *Shared) read(ctx context.Context, k item, f *flight) {
	d := s.ReadTimeout
	if d <= 0 {
		d = InteractiveTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	f.value, f.err = s.Store.Get(ctx, k.service, k.account)
	s.mu.Lock()
	delete(s.flights, k)
	if errors.Is(f.err, ErrUnavailable) {
		ttl := s.RefusalTTL
		if ttl <= 0 {
			ttl = DefaultRefusalTTL
		}
		if s.refused == nil {
			s.refused = map[item]refusal{}
		}
		s.refused[k] = refusal{err: f.err, until: s.now().Add(ttl)}
	}
	s.mu.Unlock()
	close(f.done)
}

func (s *Shared) forget(k item) {
	s.mu.Lock()
	delete(s.refused, k)
	s.mu.Unlock()
}

// Set implements Store; it forgets a refusal of the item.
func (s *Shared) Set(ctx context.Context, service, account, value string) error {
	defer s.forget(item{service, account})
	return s.Store.Set(ctx, service, account, value)
}

// Delete implements Store; it forgets a refusal of the item.
func (s *Shared) Delete(ctx context.Context, service, account string) error {
	defer s.forget(item{service, account})
	return s.Store.Delete(ctx, service, account)
}

// Ref names one item.
type Ref struct{ Service, Account string }

// setOwned stores an item so that the caller creates it: add; when an item
// of that name exists, delete it and add again. Updating the existing item
// would keep its access list, which on macOS trusts the program that made
// it (for `security add-generic-password`, /usr/bin/security), so corral
// would still be asked; a new item trusts its creator. If the second add
// fails the old value is gone: the error says so.
func setOwned(add, del func() error, exists func(error) bool) error {
	err := add()
	if err == nil || !exists(err) {
		return err
	}
	if err := del(); err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("replacing the existing item: %w", err)
	}
	if err := add(); err != nil {
		return fmt.Errorf("the existing item was removed but the new one could not be added (run the command again): %w", err)
	}
	return nil
}
