package egress

import (
	"testing"
	"testing/quick"
)

func TestParseBrokerArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want BrokerArgs
		ok   bool
	}{
		{[]string{"/bin/corral", "broker", "--box", "web", "--listen", "127.0.0.1:42001"}, BrokerArgs{"web", "127.0.0.1:42001"}, true},
		{[]string{"/bin/corral", "broker", "--listen=127.0.0.1:1", "--box=api"}, BrokerArgs{"api", "127.0.0.1:1"}, true},
		{[]string{"/bin/corral", "broker", "--box", "other"}, BrokerArgs{Box: "other"}, true},
		// A --listen value that looks like a flag is a value, not --box.
		{[]string{"/bin/corral", "broker", "--listen", "--box", "x"}, BrokerArgs{Listen: "--box"}, false},
		{[]string{"/bin/corral", "broker", "--listen", "127.0.0.1:1", "--allow", "x.example.test"}, BrokerArgs{}, false},
		{[]string{"/bin/corral", "up", "--box", "web"}, BrokerArgs{}, false},
		{[]string{"/bin/corral", "broker"}, BrokerArgs{}, false},
		{[]string{"/bin/corral", "broker", "--box"}, BrokerArgs{}, false},
		{nil, BrokerArgs{}, false},
	} {
		got, ok := ParseBrokerArgv(c.argv)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseBrokerArgv(%q) = %+v, %v; want %+v, %v", c.argv, got, ok, c.want, c.ok)
		}
	}
}

// TestBrokerArgvRoundTrip: whatever a box and address are, the process
// core/box starts is recognised as that box's broker.
func TestBrokerArgvRoundTrip(t *testing.T) {
	f := func(box, listen string) bool {
		if box == "" {
			return true
		}
		a := BrokerArgs{Box: box, Listen: listen}
		got, ok := ParseBrokerArgv(append([]string{"/usr/local/bin/corral"}, BrokerArgv(a)...))
		return ok && got == a
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}
