package funnel

import (
	"testing"

	"github.com/corral-dev/corral/core/config"
)

func TestBrokerGuestHostFor(t *testing.T) {
	for _, tt := range []struct {
		os, vm, net, want string
	}{
		{"linux", "qemu", "broker", "192.168.5.4"},
		{"linux", "qemu", "offline", "192.168.5.4"},
		{"linux", "qemu", "full", "192.168.5.2"},
		{"darwin", "vz", "broker", "192.168.5.2"},
		{"darwin", "qemu", "broker", "192.168.5.4"},
	} {
		vm, net := config.VMType(tt.vm), config.Network(tt.net)
		got := BrokerGuestHostFor(config.Platform{OS: tt.os, Arch: "amd64"}, config.Settings{VMType: vm, Network: net})
		if got != tt.want {
			t.Errorf("%s/%s/%s: %s, want %s", tt.os, tt.vm, tt.net, got, tt.want)
		}
	}
}
