package funnel

import (
	"testing"

	"github.com/corral-dev/corral/core/config"
)

func TestApplies(t *testing.T) {
	for _, tt := range []struct {
		goos string
		vm   config.VMType
		net  config.Network
		want bool
	}{
		{"linux", "qemu", "broker", true},
		{"linux", "qemu", "offline", true},
		{"linux", "qemu", "full", false},
		{"darwin", "qemu", "broker", true},
		{"darwin", "vz", "broker", false},
		{"darwin", "vz", "offline", false},
		{"windows", "qemu", "broker", false},
		{"linux", "", "broker", false},
	} {
		if got := Applies(tt.goos, tt.vm, tt.net); got != tt.want {
			t.Errorf("Applies(%q, %q, %q) = %v, want %v", tt.goos, tt.vm, tt.net, got, tt.want)
		}
	}
}

func TestGuestCommand(t *testing.T) {
	for _, tt := range []struct{ exe, box, want string }{
		{"/usr/local/bin/corral", "web-3f2a1c", "/usr/local/bin/corral guest-conn web-3f2a1c"},
		{"/Users/A B/bin/corral", "web", "'/Users/A B/bin/corral' guest-conn web"},
		{"/opt/it's/corral", "web", `'/opt/it'\''s/corral' guest-conn web`},
		{"/opt/a,b/corral", "web", "'/opt/a,b/corral' guest-conn web"},
	} {
		if got := GuestCommand(tt.exe, tt.box); got != tt.want {
			t.Errorf("GuestCommand(%q, %q) = %q, want %q", tt.exe, tt.box, got, tt.want)
		}
	}
}
