package egress

import (
	"strings"
	"testing"
)

// FuzzParseAllowEntry: the one allow-list grammar. Whatever the input,
// ParseAllowEntry never panics; an entry that parses has a canonical form
// that parses back to the same entry (parse -> canonical -> parse is
// stable), the broker's policy accepts the entry and lists it in that
// form, and the form is printable ASCII without blanks.
func FuzzParseAllowEntry(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:*", "EXAMPLE.com.:8443", "bücher.example", "x_y.example.com",
		"10.1.2.3/24", "::ffff:169.254.169.254/128", "fe80::1%eth0/64", "https://a.example/", "*.com", "a..b", "0x1.example", "1.2.3.4", "--revoke", "-x.example", "x-.example:80"} {
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
		// No entry reads as a command-line option where it is passed on
		// as an argument (corral allow BOX ENTRY, over ssh to a host).
		if strings.HasPrefix(canon, "-") || strings.Contains(canon, ".-") || strings.Contains(canon, "-.") {
			t.Fatalf("%q: canonical %q has a label that starts or ends with '-'", s, canon)
		}
		if _, perr := ParsePolicy([]string{s}, nil); perr != nil {
			t.Fatalf("%q refused by the policy's entries: %v", s, perr)
		}
		if e.IsRange() {
			if _, perr := ParsePolicy(nil, []string{canon}); perr != nil {
				t.Fatalf("%q: canonical %q refused as a range: %v", s, canon, perr)
			}
		}
		if got := NewPolicy([]AllowEntry{e}).String(); got != canon && got != "range "+canon {
			t.Fatalf("%q: policy %q, want %q", s, got, canon)
		}
	})
}

// TestEntryForAllowsExactlyTheDenial: the entry the menu grants for a
// denial parses, and allows that host on that port (a non-default port
// needs its own entry: "host" alone is 80 and 443).
func TestEntryForAllowsExactlyTheDenial(t *testing.T) {
	for _, c := range []struct {
		host string
		port int
		want string
	}{
		{"api.example.test", 443, "api.example.test"},
		{"api.example.test", 80, "api.example.test"},
		{"api.example.test", 0, "api.example.test"},
		{"localhost", 39505, "localhost:39505"},
		{"192.0.2.7", 8443, "192.0.2.7/32"},
		{"2001:db8::1", 443, "2001:db8::1/128"},
	} {
		got := EntryFor(c.host, c.port)
		if got != c.want {
			t.Errorf("EntryFor(%q, %d) = %q, want %q", c.host, c.port, got, c.want)
		}
		e, err := ParseAllowEntry(got)
		if err != nil {
			t.Errorf("%q does not parse: %v", got, err)
			continue
		}
		if !e.IsRange() && c.port != 0 && c.port != 80 && c.port != 443 && e.Port != c.port {
			t.Errorf("%q allows port %d, want %d", got, e.Port, c.port)
		}
	}
}

// TestPolicyTakesTheConfigsEntries: ParsePolicy's entries are the config's
// egress entries, ranges among them, blanks around them ignored; its
// ranges must be ranges.
func TestPolicyTakesTheConfigsEntries(t *testing.T) {
	p, err := ParsePolicy([]string{" 10.9.0.0/16 ", "a.example.test"}, []string{"127.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.String(); got != "a.example.test, range 10.9.0.0/16, range 127.0.0.0/8" {
		t.Errorf("policy %q", got)
	}
	if _, err := ParsePolicy(nil, []string{"a.example.test"}); err == nil || !strings.Contains(err.Error(), "not a range") {
		t.Errorf("a host as a range: %v", err)
	}
}

func TestDomainEntry(t *testing.T) {
	for in, want := range map[string]string{
		"Example.TEST.": "*.example.test", "bücher.example": "*.xn--bcher-kva.example",
		"": "", "a b": "", "example.test:80": "", "10.0.0.1": "",
	} {
		if got := DomainEntry(in); got != want {
			t.Errorf("DomainEntry(%q) = %q, want %q", in, got, want)
		}
	}
	if got := RegistrableDomain("a.b.example.co.uk"); got != "example.co.uk" {
		t.Errorf("RegistrableDomain = %q", got)
	}
}
