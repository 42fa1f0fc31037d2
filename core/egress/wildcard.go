package egress

import (
	"fmt"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// WildcardError reports a wildcard entry at or above a public suffix, such
// as "*.com", "*.co.uk" or "*.github.io": it would allow every registrant's
// names under it.
type WildcardError struct {
	Entry  string
	Suffix string // the public suffix the wildcard covers
}

func (e *WildcardError) Error() string {
	return fmt.Sprintf("allow entry %q: a wildcard over the public suffix %q would allow every domain registered under it", e.Entry, e.Suffix)
}

// Hint says what to allow instead.
func (e *WildcardError) Hint() string {
	return "allow one registrable domain and its subdomains instead, such as '*.example." + e.Suffix + "', or exact hosts"
}

// CheckWildcard refuses a wildcard entry ("*.suffix", with or without a
// port) whose suffix is a public suffix (ICANN or private section of the
// Public Suffix List, or an unlisted top-level label, which the list's
// default rule treats as one). Other entries pass. Approvals (`corral
// allow`, the menu) go through it; the menu only ever offers registrable
// domains.
func CheckWildcard(entry string) error {
	s := strings.TrimSpace(entry)
	if !strings.HasPrefix(s, "*.") {
		return nil
	}
	suffix := s[2:]
	if i := strings.LastIndexByte(suffix, ':'); i >= 0 {
		suffix = suffix[:i]
	}
	suffix = strings.TrimSuffix(strings.ToLower(suffix), ".")
	if suffix == "" {
		return &WildcardError{Entry: entry, Suffix: suffix}
	}
	if ps, _ := publicsuffix.PublicSuffix(suffix); ps == suffix {
		return &WildcardError{Entry: entry, Suffix: suffix}
	}
	return nil
}
