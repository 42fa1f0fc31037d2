package secret

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestKeychainError(t *testing.T) {
	cause := errors.New("OSStatus")
	for _, tc := range []struct {
		status   int
		kind     error
		msg      string // in Error()
		hint     string // in Hint()
		notHint  string
		unmapped bool
	}{
		{status: errSecItemNotFound, kind: ErrNotFound, hint: "corral secret set --service s --account a"},
		{status: errSecUserCanceled, kind: ErrUnavailable, msg: "denied in the Keychain dialog", hint: "Always Allow", notHint: "unlock"},
		{status: errSecAuthFailed, kind: ErrUnavailable, msg: "OSStatus", hint: "password was not accepted"},
		{status: errSecInteractionNotAllowed, kind: ErrUnavailable, hint: "unlock your login keychain"},
		{status: errSecNoSuchKeychain, kind: ErrUnavailable, hint: "unlock your login keychain"},
		{status: -67068, unmapped: true},
	} {
		err, ok := keychainError("reading keychain", "s", "a", tc.status, cause)
		if ok == tc.unmapped {
			t.Errorf("%d: mapped = %v", tc.status, ok)
			continue
		}
		if tc.unmapped {
			continue
		}
		var se *Error
		if !errors.Is(err, tc.kind) || !errors.As(err, &se) {
			t.Errorf("%d: %v, want %v", tc.status, err, tc.kind)
			continue
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(se.Hint(), tc.hint) ||
			(tc.notHint != "" && strings.Contains(se.Hint(), tc.notHint)) {
			t.Errorf("%d: %q / hint %q", tc.status, err, se.Hint())
		}
	}
}

func TestInteractive(t *testing.T) {
	ctx, cancel := Interactive(context.Background(), true)
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || time.Until(d) < InteractiveTimeout-time.Second {
		t.Errorf("interactive deadline %v, %v", d, ok)
	}
	// The store's own short timeout yields to the longer deadline.
	inner, c2 := withTimeout(ctx, 0)
	defer c2()
	if d, _ := inner.Deadline(); time.Until(d) < time.Minute {
		t.Errorf("withTimeout shortened an interactive deadline to %v", time.Until(d))
	}
	ctx, cancel = Interactive(context.Background(), false)
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("non-interactive context got a deadline")
	}
	if !strings.Contains(keychainTimeoutHint("s", "a"), "corral secret set --service s --account a") {
		t.Error("timeout hint does not recommend corral secret set")
	}
}

func TestProbeAccess(t *testing.T) {
	for _, tc := range []struct {
		status int
		found  bool
		want   Access
	}{
		{0, true, AccessReadable},
		{0, false, AccessMissing},
		{errSecItemNotFound, false, AccessMissing},
		{errSecInteractionNotAllowed, false, AccessPrompts},
		{errSecAuthFailed, false, AccessUnknown},
	} {
		if got := probeAccess(tc.status, tc.found); got != tc.want {
			t.Errorf("probeAccess(%d, %v) = %v, want %v", tc.status, tc.found, got, tc.want)
		}
	}
}
