package egress

import (
	"strings"
	"testing"
)

// FuzzParseAllowEntry: the one allow-list grammar. Whatever the input,
// ParseAllowEntry never panics; an entry that parses has a canonical form
// that parses back to the same entry (parse -> canonical -> parse is
// stable), the broker's policy accepts that form (ranges as ranges), and
// the form is printable ASCII without blanks.
func FuzzParseAllowEntry(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:*", "EXAMPLE.com.:8443", "bücher.example", "x_y.example.com",
		"10.1.2.3/24", "::ffff:169.254.169.254/128", "fe80::1%eth0/64", "https://a.example/", "*.com", "a..b", "0x1.example", "1.2.3.4"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseAllowEntry(s)
		if err != nil {
			return
		}
		canon := e.String()
		again, err := ParseAllowEntry(canon)
		if err != nil || again != e || again.String() != canon {
			t.Fatalf("%q -> %q -> %+v, %v (was %+v)", s, canon, again, err, e)
		}
		if strings.ContainsFunc(canon, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
			t.Fatalf("%q: canonical %q is not printable ASCII", s, canon)
		}
		var perr error
		if e.IsRange() {
			_, perr = ParsePolicy(nil, []string{canon})
		} else {
			_, perr = ParsePolicy([]string{canon}, nil)
		}
		if perr != nil {
			t.Fatalf("%q: canonical %q refused by the policy: %v", s, canon, perr)
		}
	})
}
