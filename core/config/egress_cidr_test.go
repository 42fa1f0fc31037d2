package config

import "testing"

// CIDR entries (trusted layers only, as every egress entry) let the broker
// reach private and IP-literal destinations in the range.
func TestCheckEgressEntryCIDR(t *testing.T) {
	for _, ok := range []string{"127.0.0.0/8", "10.1.2.0/24", "fd00::/8", "192.0.2.7/32"} {
		if err := CheckEgressEntry(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"127.0.0.0/33", "10.0.0.0/", "/8"} {
		if CheckEgressEntry(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
