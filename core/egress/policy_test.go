package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func mustPolicy(t testing.TB, entries, ranges []string) *Policy {
	t.Helper()
	p, err := ParsePolicy(entries, ranges)
	if err != nil {
		t.Fatalf("ParsePolicy: %v", err)
	}
	return p
}

func TestParsePolicyErrors(t *testing.T) {
	bad := []string{"", "*", "*.", "a.*.test", "*foo.test", "foo.test:0", "foo.test:x", "foo.test:",
		"https://foo.test", "foo.test/x", "u@foo.test", "127.0.0.1", "[::1]:443", "::1", "foo..test", "127.1"}
	for _, e := range bad {
		_, err := ParsePolicy([]string{"ok.test", e}, nil)
		if err == nil {
			t.Errorf("ParsePolicy(%q): no error", e)
			continue
		}
		if !strings.Contains(err.Error(), "\""+e+"\"") {
			t.Errorf("error %q does not name entry %q", err, e)
		}
	}
	_, err := ParsePolicy(nil, []string{"10.0.0.0/8", "10.0.0.0", "fe80::/10%eth0"})
	if err == nil || !strings.Contains(err.Error(), `"10.0.0.0"`) {
		t.Errorf("bad range: got %v", err)
	}
	// All problems at once.
	_, err = ParsePolicy([]string{"a b", "*"}, []string{"x"})
	if err == nil || strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("want three joined errors, got %v", err)
	}
}

func TestDecide(t *testing.T) {
	p := mustPolicy(t, []string{
		"exact.test", "*.wild.test", "port.test:8443", "any.test:*", "Mixed.Case.TEST.",
		"*.bücher.test", "both.test", "both.test:22", "*.deep.wild2.test:*",
	}, []string{"127.0.0.0/8", "fd00::/8"})
	tests := []struct {
		host string
		port int
		ip   string
		want Reason
	}{
		{"exact.test", 443, "", ReasonAllowed},
		{"exact.test", 80, "", ReasonAllowed},
		{"exact.test", 8080, "", ReasonPortNotAllowed},
		{"sub.exact.test", 443, "", ReasonHostNotAllowed},
		{"a.wild.test", 443, "", ReasonAllowed},
		{"a.b.wild.test", 443, "", ReasonAllowed},
		{"wild.test", 443, "", ReasonHostNotAllowed},
		{"badwild.test", 443, "", ReasonHostNotAllowed},
		{"a.wild.test", 22, "", ReasonPortNotAllowed},
		{"port.test", 8443, "", ReasonAllowed},
		{"port.test", 443, "", ReasonPortNotAllowed},
		{"any.test", 1, "", ReasonAllowed},
		{"any.test", 65535, "", ReasonAllowed},
		{"mixed.case.test", 443, "", ReasonAllowed},
		{"x.xn--bcher-kva.test", 443, "", ReasonAllowed},
		{"both.test", 22, "", ReasonAllowed},
		{"both.test", 443, "", ReasonAllowed},
		{"both.test", 23, "", ReasonPortNotAllowed},
		{"x.deep.wild2.test", 9999, "", ReasonAllowed},
		{"deep.wild2.test", 9999, "", ReasonHostNotAllowed},
		// resolved addresses
		{"exact.test", 443, "93.184.216.34", ReasonAllowed},
		{"exact.test", 443, "127.0.0.1", ReasonAllowed}, // range
		{"exact.test", 443, "10.1.2.3", ReasonPrivateIP},
		{"exact.test", 443, "192.168.1.1", ReasonPrivateIP},
		{"exact.test", 443, "172.16.0.1", ReasonPrivateIP},
		{"exact.test", 443, "100.64.0.1", ReasonPrivateIP},
		{"exact.test", 443, "169.254.169.254", ReasonPrivateIP},
		{"exact.test", 443, "224.0.0.1", ReasonPrivateIP},
		{"exact.test", 443, "0.0.0.0", ReasonPrivateIP},
		{"exact.test", 443, "255.255.255.255", ReasonPrivateIP},
		{"exact.test", 443, "::", ReasonPrivateIP},
		{"exact.test", 443, "::1", ReasonPrivateIP},
		{"exact.test", 443, "fe80::1", ReasonPrivateIP},
		{"exact.test", 443, "fc00::1", ReasonPrivateIP},
		{"exact.test", 443, "fd00::1", ReasonAllowed}, // range
		{"exact.test", 443, "::ffff:127.0.0.1", ReasonPrivateIP},
		{"exact.test", 443, "::ffff:93.184.216.34", ReasonPrivateIP},
		{"exact.test", 443, "64:ff9b::a00:1", ReasonPrivateIP},     // NAT64 of 10.0.0.1
		{"exact.test", 443, "64:ff9b::5db8:d822", ReasonAllowed},   // NAT64 of 93.184.216.34
		{"exact.test", 443, "2606:2800:220:1::248", ReasonAllowed}, // global v6
		{"nope.test", 443, "93.184.216.34", ReasonHostNotAllowed},
		// IP literals
		{"127.0.0.1", 22, "", ReasonAllowed},
		{"10.0.0.1", 443, "", ReasonIPLiteral},
		{"93.184.216.34", 443, "", ReasonIPLiteral},
		{"::1", 443, "", ReasonIPLiteral},
		{"fd00::5", 443, "", ReasonAllowed},
	}
	for _, tt := range tests {
		var ip netip.Addr
		if tt.ip != "" {
			ip = netip.MustParseAddr(tt.ip)
		}
		d := p.Decide(Request{Kind: KindConnect, Host: tt.host, Port: tt.port, IP: ip})
		if d.Reason != tt.want || d.Allowed != (tt.want == ReasonAllowed) {
			t.Errorf("Decide(%s:%d ip=%s) = %v/%q, want %q", tt.host, tt.port, tt.ip, d.Allowed, d.Reason, tt.want)
		}
		if d.Host != tt.host || d.Port != tt.port || d.Kind != KindConnect {
			t.Errorf("Decide did not carry the request: %+v", d)
		}
	}
}

func TestEmptyPolicyDeniesAll(t *testing.T) {
	p := mustPolicy(t, nil, nil)
	for _, r := range []Request{{Host: "a.test", Port: 443}, {Host: "127.0.0.1", Port: 80}} {
		if d := p.Decide(r); d.Allowed {
			t.Errorf("empty policy allowed %+v", r)
		}
	}
}

func TestBrokerPort(t *testing.T) {
	seen := map[int]bool{}
	for _, b := range []string{"a", "b", "my-project", "other"} {
		p := BrokerPort(b)
		if p < 42000 || p > 42999 {
			t.Fatalf("BrokerPort(%q) = %d", b, p)
		}
		if BrokerPort(b) != p {
			t.Fatal("BrokerPort not stable")
		}
		seen[p] = true
	}
	// FNV-1a of "a" is 0xe40c292c = 3826002220; 3826002220 % 1000 = 220.
	if got := BrokerPort("a"); got != 42220 {
		t.Errorf("BrokerPort(a) = %d, want 42220", got)
	}
	base := BrokerPort("box")
	taken := map[int]bool{base: true, base + 1: true}
	if got := PickPort("box", func(p int) bool { return taken[p] }); got != base+2 && !(base+2 > 42999) {
		t.Errorf("PickPort = %d, want %d", got, base+2)
	}
	if got := PickPort("box", func(int) bool { return false }); got != base {
		t.Errorf("PickPort free = %d, want %d", got, base)
	}
	if got := PickPort("box", func(p int) bool { return p != 42000 }); got != 42000 {
		t.Errorf("PickPort wrap = %d, want 42000", got)
	}
	if got := PickPort("box", func(int) bool { return true }); got != 0 {
		t.Errorf("PickPort all taken = %d, want 0", got)
	}
}
