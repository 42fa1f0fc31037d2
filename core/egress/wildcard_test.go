package egress

import (
	"errors"
	"testing"
)

func TestCheckWildcard(t *testing.T) {
	for _, tc := range []struct {
		entry string
		bad   bool
	}{
		{"*.com", true},
		{"*.com:443", true},
		{"*.com:*", true},
		{"*.COM.", true},
		{"*.co.uk", true},
		{"*.uk", true},
		{"*.github.io", true}, // private section: every user's pages
		{"*.xn--p1ai", true},  // .рф
		{"*.corp", true},      // unlisted TLD: the default rule
		{"*.example.com", false},
		{"*.example.co.uk", false},
		{"*.user.github.io", false},
		{"example.com", false},
		{"com", false}, // an exact host, not a wildcard
		{"*.api.example.com:8443", false},
	} {
		err := CheckWildcard(tc.entry)
		var we *WildcardError
		if got := errors.As(err, &we); got != tc.bad {
			t.Errorf("CheckWildcard(%q) = %v, want refused=%v", tc.entry, err, tc.bad)
		}
		if we != nil && we.Hint() == "" {
			t.Errorf("CheckWildcard(%q): no hint", tc.entry)
		}
	}
}
