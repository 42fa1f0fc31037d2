package secret

import (
	"context"
	"errors"
	"testing"
)

func TestMemory(t *testing.T) {
	ctx := context.Background()
	var m Memory
	if _, err := m.Get(ctx, "svc", "acct"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get on empty: %v, want ErrNotFound", err)
	}
	if err := m.Set(ctx, "svc", "acct", ""); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(ctx, "svc", "acct"); err != nil || v != "" {
		t.Fatalf("empty value: %q, %v", v, err)
	}
	if err := m.Set(ctx, "svc", "acct", "tok"); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(ctx, "svc", "acct"); err != nil || v != "tok" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := m.Delete(ctx, "svc", "acct"); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete(ctx, "svc", "acct"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second Delete: %v, want ErrNotFound", err)
	}
	m.Unavailable = true
	if _, err := m.Get(ctx, "svc", "acct"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("unavailable Get: %v", err)
	}
}

func TestNotFoundError(t *testing.T) {
	err := NotFound("anthropic", "default")
	if got, want := err.Error(), `secret not found: service "anthropic" account "default"`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatal("not an *Error")
	}
	if got, want := e.Hint(), "store it: corral secret set --service anthropic --account default"; got != want {
		t.Errorf("Hint() = %q, want %q", got, want)
	}
	if errors.Is(err, ErrUnavailable) {
		t.Error("not-found matches ErrUnavailable")
	}
}

func TestUnavailableError(t *testing.T) {
	cause := errors.New("boom")
	err := Unavailable("s", "a", cause, "start it")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, cause) {
		t.Errorf("errors.Is fails for %v", err)
	}
	if got, want := err.Error(), `secret store unavailable: service "s" account "a": boom`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
