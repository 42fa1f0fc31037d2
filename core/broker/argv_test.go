package broker

import (
	"testing"
	"testing/quick"
)

func TestParseArgv(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want Args
		ok   bool
	}{
		{[]string{"/bin/corral", "broker", "--box", "web", "--listen", "127.0.0.1:42001"}, Args{"web", "127.0.0.1:42001"}, true},
		{[]string{"/bin/corral", "broker", "--listen=127.0.0.1:1", "--box=api"}, Args{"api", "127.0.0.1:1"}, true},
		{[]string{"/bin/corral", "broker", "--box", "other"}, Args{Box: "other"}, true},
		// A --listen value that looks like a flag is a value, not --box.
		{[]string{"/bin/corral", "broker", "--listen", "--box", "x"}, Args{Listen: "--box"}, false},
		{[]string{"/bin/corral", "broker", "--listen", "127.0.0.1:1", "--allow", "x.example.test"}, Args{}, false},
		{[]string{"/bin/corral", "up", "--box", "web"}, Args{}, false},
		{[]string{"/bin/corral", "broker"}, Args{}, false},
		{[]string{"/bin/corral", "broker", "--box"}, Args{}, false},
		{nil, Args{}, false},
	} {
		got, ok := ParseArgv(c.argv)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("ParseArgv(%q) = %+v, %v; want %+v, %v", c.argv, got, ok, c.want, c.ok)
		}
	}
}

// TestArgvRoundTrip: whatever a box and address are, the process
// core/box starts is recognised as that box's broker.
func TestArgvRoundTrip(t *testing.T) {
	f := func(box, listen string) bool {
		if box == "" {
			return true
		}
		a := Args{Box: box, Listen: listen}
		got, ok := ParseArgv(append([]string{"/usr/local/bin/corral"}, Argv(a)...))
		return ok && got == a
	}
	if err := quick.Check(f, nil); err != nil {
		t.Error(err)
	}
}
