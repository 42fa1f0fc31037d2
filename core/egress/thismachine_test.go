package egress

import (
	"net/netip"
	"strings"
	"testing"
	"testing/quick"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/display"
)

// TestThisMachine: the names and addresses that mean the host computer
// are marked, in any case, bracketed, mapped or with a trailing dot; other
// names, look-alikes and private or public addresses are not.
func TestThisMachine(t *testing.T) {
	for _, h := range []string{"localhost", "LOCALHOST", "localhost.", "api.localhost", "a.b.localhost.",
		"localhost.localdomain", "ip6-localhost", "ip6-loopback",
		"127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "[::1]", "::ffff:127.0.0.1", "[::ffff:7f00:1]",
		"0.0.0.0", "0.1.2.3", "::"} {
		if !ThisMachine(h) {
			t.Errorf("ThisMachine(%q) = false", h)
		}
	}
	for _, h := range []string{"", "example.test", "localhost.example.test", "notlocalhost", "mylocalhost",
		"localhost-dev", "xn--localhost", "10.0.0.1", "192.168.5.2", "169.254.169.254", "::2", "fe80::1",
		"128.0.0.1", "1.0.0.127", "[127.0.0.1", "localhost:3000"} {
		if ThisMachine(h) {
			t.Errorf("ThisMachine(%q) = true", h)
		}
	}
}

// TestShowTarget: what a request or a denial names is shown through
// core/display, marked when it is this computer, whatever the port or
// wildcard, and the mark survives the cut of a long name.
func TestShowTarget(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"localhost:3000", "localhost:3000 (this machine)"},
		{"localhost", "localhost (this machine)"},
		{"*.localhost", "*.localhost (this machine)"},
		{"[::1]:5432", "[::1]:5432 (this machine)"},
		{"127.0.0.1:8080", "127.0.0.1:8080 (this machine)"},
		{"api.localhost:*", "api.localhost:* (this machine)"},
		{"registry.example.test", "registry.example.test"},
		{"registry.example.test:443", "registry.example.test:443"},
		{"10.0.0.1:22", "10.0.0.1:22"},
		{"evil\x1b[31m.localhost", display.Authority("evil\x1b[31m.localhost", 0) + " (this machine)"},
	} {
		if got := ShowTarget(tc.in, 0); got != tc.want {
			t.Errorf("ShowTarget(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := ShowHost("::1", 0); got != "::1 (this machine)" {
		t.Errorf("ShowHost(::1) = %q", got)
	}
	if got := ShowHost("example.test", 0); got != "example.test" {
		t.Errorf("ShowHost(example.test) = %q", got)
	}
	long := strings.Repeat("a", 300) + ".localhost:3000"
	if got := ShowTarget(long, 20); !strings.HasSuffix(got, "localhost:3000 (this machine)") {
		t.Errorf("a long local name cut: %q", got)
	}
}

// TestThisMachineProperty: every IPv4 loopback address, in every written
// form (plain, mapped, bracketed, with a port), is this machine; every
// address outside loopback, 0.0.0.0/8 and :: is not.
func TestThisMachineProperty(t *testing.T) {
	f := func(b [4]byte, port uint16) bool {
		a := netip.AddrFrom4(b)
		want := b[0] == 127 || b[0] == 0
		m := netip.AddrFrom16(a.As16())
		ap := netip.AddrPortFrom(a, port).String()
		return ThisMachine(a.String()) == want && ThisMachine(m.String()) == want &&
			ThisMachine("["+m.String()+"]") == want && ThisMachine(EntryHost(ap)) == want &&
			strings.HasSuffix(ShowTarget(ap, 0), " ("+ThisMachineMark+")") == want
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	g := func(b [16]byte) bool {
		a := netip.AddrFrom16(b)
		want := a == netip.IPv6Loopback() || a == netip.IPv6Unspecified() ||
			(a.Is4In6() && (a.Unmap().As4()[0] == 127 || a.Unmap().As4()[0] == 0))
		return ThisMachine(a.String()) == want
	}
	if err := quick.Check(g, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

// FuzzShowTarget: any text a box can put in a request or a denial shows
// as display-safe text, marked when its host is this computer.
func FuzzShowTarget(f *testing.F) {
	for _, s := range []string{"localhost:3000", "[::1]:5432", "*.localhost", "example.test:443", "127.0.0.1", "\x1b]8;;x\x07", "ЛОКАЛХОСТ", "[::ffff:127.0.0.1]:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ShowTarget(s, 40)
		if !utf8.ValidString(got) {
			t.Fatalf("ShowTarget(%q) = %q: invalid UTF-8", s, got)
		}
		for _, r := range got {
			if display.Unsafe(r) {
				t.Fatalf("ShowTarget(%q) = %q holds %U", s, got, r)
			}
		}
		// The mark is added after the cut, exactly for this computer.
		// (Text that itself ends in "(this machine)" shows as it is: it
		// can make a host look local, never hide that one is.)
		want := display.Authority(s, 40)
		if ThisMachine(EntryHost(s)) {
			want += " (" + ThisMachineMark + ")"
		}
		if got != want {
			t.Fatalf("ShowTarget(%q) = %q, want %q", s, got, want)
		}
	})
}
