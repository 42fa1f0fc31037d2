package hint

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

var errBase = errors.New("base")

func TestAll(t *testing.T) {
	inner := New(errBase, "inner hint")
	wrapped := fmt.Errorf("starting box b: %w", inner)
	if wrapped.Error() != "starting box b: base" {
		t.Errorf("a hint leaked into the message: %q", wrapped)
	}
	if !errors.Is(wrapped, errBase) {
		t.Error("errors.Is does not see through a hint")
	}
	outer := New(fmt.Errorf("again: %w", inner), "outer hint")
	joined := errors.Join(wrapped, outer, New(errors.New("x"), "inner hint"), errors.New("no hint"))
	if got := All(joined); !slices.Equal(got, []string{"inner hint", "outer hint"}) {
		t.Errorf("All = %q", got)
	}
	if Of(outer) != "outer hint" || Of(errBase) != "" || All(nil) != nil {
		t.Errorf("Of(outer) = %q, Of(base) = %q", Of(outer), Of(errBase))
	}
	if New(nil, "x") != nil {
		t.Error("New(nil) is not nil")
	}
}

func TestOr(t *testing.T) {
	if got := Or(errors.New("x"), "default"); got != "default" {
		t.Errorf("no hint: %q", got)
	}
	err := fmt.Errorf("wrapped: %w", New(errors.New("x"), "do this"))
	if got := Or(err, "default"); got != "do this" {
		t.Errorf("a wrapped hint: %q", got)
	}
}
