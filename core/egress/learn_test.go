package egress

import (
	"net/netip"
	"testing"
)

// A learning policy allows names off the list when they resolve to public
// addresses, with ReasonLearning; private and special addresses, IP
// literals and the list's own decisions are unchanged.
func TestPolicyLearning(t *testing.T) {
	p, err := ParsePolicy([]string{"listed.example.test"}, []string{"10.9.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	lp := p.Learning()
	if p.IsLearning() || !lp.IsLearning() {
		t.Fatal("Learning must return a learning copy and leave p alone")
	}
	public := netip.MustParseAddr("93.184.216.34")
	for _, tc := range []struct {
		host   string
		port   int
		ip     string
		allow  bool
		reason Reason
	}{
		{"listed.example.test", 443, "93.184.216.34", true, ReasonAllowed},
		{"new.example.test", 443, "", true, ReasonLearning},
		{"new.example.test", 443, "93.184.216.34", true, ReasonLearning},
		{"new.example.test", 8443, "93.184.216.34", true, ReasonLearning},
		{"listed.example.test", 22, "93.184.216.34", true, ReasonLearning},
		{"new.example.test", 443, "127.0.0.1", false, ReasonPrivateIP},
		{"new.example.test", 443, "169.254.169.254", false, ReasonPrivateIP},
		{"new.example.test", 443, "192.168.1.1", false, ReasonPrivateIP},
		{"new.example.test", 443, "10.9.1.1", true, ReasonLearning}, // an explicit range still allows
		{"93.184.216.34", 443, "93.184.216.34", false, ReasonIPLiteral},
	} {
		r := Request{Kind: KindConnect, Host: tc.host, Port: tc.port}
		if tc.ip != "" {
			r.IP = netip.MustParseAddr(tc.ip)
		}
		d := lp.Decide(r)
		if d.Allowed != tc.allow || d.Reason != tc.reason {
			t.Errorf("learning %s:%d (%s): %v %s, want %v %s", tc.host, tc.port, tc.ip, d.Allowed, d.Reason, tc.allow, tc.reason)
		}
	}
	if d := p.Decide(Request{Kind: KindConnect, Host: "new.example.test", Port: 443, IP: public}); d.Allowed {
		t.Errorf("the enforcing policy learned: %+v", d)
	}
}
