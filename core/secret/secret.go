// Package secret reads and writes secrets (API tokens and the like) in the
// operating system's secret store, so that corral config can name a secret
// without holding its value.
//
// A secret is addressed by a service and an account, the two attributes every
// platform store understands:
//
//   - macOS: a generic password in the login keychain with kSecAttrService =
//     service and kSecAttrAccount = account (security add-generic-password
//     -s SERVICE -a ACCOUNT -w).
//   - Linux: an item in the Secret Service (gnome-keyring, KeePassXC, KWallet)
//     with the lookup attributes "service" and "account", created in the
//     default collection. Store one by hand with
//     secret-tool store --label=LABEL service SERVICE account ACCOUNT
//     and read it back with secret-tool lookup service SERVICE account ACCOUNT.
//
// Every call is bounded: when the context has no deadline, DefaultTimeout
// applies, so a missing, hung or locked keyring yields ErrUnavailable instead
// of a hang. A caller that may trigger an unlock prompt (an interactive
// "corral secret set") should pass a context with a longer deadline.
package secret

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Store gets, sets and deletes secrets by service and account.
type Store interface {
	// Get returns the secret's value. A missing secret is an error matching
	// ErrNotFound; an empty stored value is "" and no error.
	Get(ctx context.Context, service, account string) (string, error)
	// Set creates or replaces the secret.
	Set(ctx context.Context, service, account, value string) error
	// Delete removes the secret; a missing secret matches ErrNotFound.
	Delete(ctx context.Context, service, account string) error
}

// DefaultTimeout bounds each call whose context has no deadline.
const DefaultTimeout = 5 * time.Second

var (
	// ErrNotFound means no secret exists for the service and account.
	ErrNotFound = errors.New("secret not found")
	// ErrUnavailable means the secret store could not be used: no keyring
	// daemon, a locked keyring, or no answer in time.
	ErrUnavailable = errors.New("secret store unavailable")
)

// Error is the error returned for ErrNotFound and ErrUnavailable. It names the
// service and account and carries a hint for the user.
type Error struct {
	Kind    error // ErrNotFound or ErrUnavailable
	Service string
	Account string
	Cause   error // what went wrong underneath; may be nil
	hint    string
	// agent is what a box's agent is told when its request needs the
	// item ("" = nothing more than that it is unavailable).
	agent string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%v: service %q account %q", e.Kind, e.Service, e.Account)
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap lets errors.Is match Kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// Hint is a line telling the user what to do, printed below the error.
func (e *Error) Hint() string { return e.hint }

// AgentText is what the broker answers an agent whose request needs the
// item, when there is more to say than "not available" ("" otherwise).
// It names the item and the command that fixes it; never a value.
func (e *Error) AgentText() string { return e.agent }

// NotFound returns an ErrNotFound error for service and account with a hint
// on how to store the secret.
func NotFound(service, account string) error {
	return &Error{
		Kind: ErrNotFound, Service: service, Account: account,
		hint: fmt.Sprintf("store it: corral secret set --service %s --account %s", service, account),
	}
}

// Unavailable returns an ErrUnavailable error for service and account. hint
// names what to start or unlock.
func Unavailable(service, account string, cause error, hint string) error {
	return &Error{Kind: ErrUnavailable, Service: service, Account: account, Cause: cause, hint: hint}
}

// withTimeout applies DefaultTimeout (or d when non-zero) if ctx has no
// deadline.
func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	if d <= 0 {
		d = DefaultTimeout
	}
	return context.WithTimeout(ctx, d)
}

// Memory is an in-memory Store for tests. The zero value is empty and ready.
type Memory struct {
	// Unavailable makes every call fail with ErrUnavailable, to test how a
	// caller handles a missing keyring.
	Unavailable bool

	mu sync.Mutex
	m  map[[2]string]string
}

var _ Store = (*Memory)(nil)

func (m *Memory) check(service, account string) error {
	if m.Unavailable {
		return Unavailable(service, account, nil, "secret.Memory is set unavailable")
	}
	return nil
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, service, account string) (string, error) {
	if err := m.check(service, account); err != nil {
		return "", err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[[2]string{service, account}]
	if !ok {
		return "", NotFound(service, account)
	}
	return v, nil
}

// Set implements Store.
func (m *Memory) Set(_ context.Context, service, account, value string) error {
	if err := m.check(service, account); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[[2]string]string{}
	}
	m.m[[2]string{service, account}] = value
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, service, account string) error {
	if err := m.check(service, account); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{service, account}
	if _, ok := m.m[k]; !ok {
		return NotFound(service, account)
	}
	delete(m.m, k)
	return nil
}
