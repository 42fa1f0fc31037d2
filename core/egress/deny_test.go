package egress

import (
	"net/netip"
	"testing"
)

// TestPolicyDeny: a denied entry (the organisation's deny_egress) refuses
// what the allow-list or learning would allow: a host by name, a name by
// the address it resolved to, an IP literal in a denied range.
func TestPolicyDeny(t *testing.T) {
	parse := func(ss ...string) []AllowEntry {
		var out []AllowEntry
		for _, s := range ss {
			e, err := ParseAllowEntry(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	p := NewPolicy(parse("*.example.test", "10.1.0.0/16", "api.other.test")).Deny(parse("*.corp.example.test", "203.0.113.0/24", "10.1.2.0/24"))
	for _, c := range []struct {
		host string
		ip   string
		want Reason
	}{
		{"api.example.test", "", ReasonAllowed},
		{"db.corp.example.test", "", ReasonPolicyDenied},
		{"DB.Corp.Example.Test.", "", ReasonPolicyDenied},
		{"corp.example.test", "", ReasonPolicyDenied},
		{"api.other.test", "203.0.113.7", ReasonPolicyDenied},
		{"api.other.test", "8.8.8.8", ReasonAllowed}, // a public address (never dialled: Decide only)
		{"10.1.2.3", "", ReasonPolicyDenied},
		{"10.1.3.3", "", ReasonAllowed},
	} {
		r := Request{Kind: KindConnect, Host: c.host, Port: 443}
		if c.ip != "" {
			r.IP = netip.MustParseAddr(c.ip)
		}
		if d := p.Decide(r); d.Reason != c.want {
			t.Errorf("%s (%s): %s, want %s", c.host, c.ip, d.Reason, c.want)
		}
		if c.want == ReasonPolicyDenied {
			if d := p.Learning().Decide(r); d.Allowed {
				t.Errorf("%s: allowed while learning", c.host)
			}
		}
	}
}
