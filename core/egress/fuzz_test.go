package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func FuzzParseAuthority(f *testing.F) {
	for _, s := range []string{"example.test:443", "EXAMPLE.test.:80", "[::1]:443", "127.0.0.1:22", "bücher.test:1",
		"u@h:1", "h:", ":1", "[::1", "xn--bcher-kva.test:443", "127.1:80", "a..b:1", "[fe80::1%25x]:1", "h:65536"} {
		f.Add(s, 0)
		f.Add(s, 80)
	}
	f.Fuzz(func(t *testing.T, s string, defPort int) {
		if defPort < 0 || defPort > 65535 {
			defPort = 80
		}
		a, err := ParseAuthority(s, defPort)
		if err != nil {
			return
		}
		if a.Host == "" || a.Port < 1 || a.Port > 65535 {
			t.Fatalf("ParseAuthority(%q) = %+v", s, a)
		}
		if !a.IP.IsValid() && a.Host != strings.ToLower(a.Host) {
			t.Fatalf("host %q not canonical", a.Host)
		}
		// Canonical output parses to itself.
		b, err := ParseAuthority(a.String(), 0)
		if err != nil || b != a {
			t.Fatalf("round trip %q -> %q -> %+v, %v", s, a.String(), b, err)
		}
	})
}

func FuzzPolicyDecide(f *testing.F) {
	p, err := ParsePolicy([]string{"*.x.test", "exact.test:8443", "any.test:*"}, nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"x.test", "a.x.test", "badx.test", "exact.test", "any.test", "127.0.0.1", "a.b.x.test", "X.TEST."} {
		f.Add(s, 443, "")
		f.Add(s, 8443, "10.0.0.1")
		f.Add(s, 80, "93.184.216.34")
	}
	f.Fuzz(func(t *testing.T, target string, port int, ip string) {
		if port < 1 || port > 65535 {
			port = 443
		}
		a, err := ParseAuthority(target, port)
		if err != nil {
			return
		}
		var addr netip.Addr
		if v, err := netip.ParseAddr(ip); err == nil {
			addr = v
		}
		d := p.Decide(Request{Kind: KindConnect, Host: a.Host, Port: a.Port, IP: addr})
		if !d.Allowed {
			return
		}
		switch {
		case a.Host == "x.test", strings.HasSuffix(a.Host, "x.test") && !strings.HasSuffix(a.Host, ".x.test") && a.Host != "exact.test":
			t.Fatalf("%q allowed by *.x.test", a.Host)
		case a.IP.IsValid():
			t.Fatalf("IP literal %v allowed without ranges", a.IP)
		case addr.IsValid() && !PublicAddr(addr):
			t.Fatalf("non-public %v allowed without ranges", addr)
		case a.Host == "exact.test" && a.Port != 8443:
			t.Fatalf("exact.test:%d allowed", a.Port)
		case d.Reason != ReasonAllowed:
			t.Fatalf("allowed with reason %q", d.Reason)
		}
	})
}
