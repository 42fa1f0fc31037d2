package config

import (
	"slices"
	"strings"
	"testing"
)

func TestHostPorts(t *testing.T) {
	for _, tc := range []struct {
		toml string
		want string // "" = valid
	}{
		{"host_ports = [63342, 9229]", ""},
		{"host_ports = [22]", "22: not a port from 1024"},
		{"host_ports = [70000]", "70000: not a port"},
		{"host_ports = [63342, 63342]", "63342: named twice"},
		{"host_ports = [42000]", "broker port range"},
		{`host_ports = ["9000-9100"]`, "host_ports"}, // a range is no integer
		{"host_ports = [1025, 1026, 1027, 1028, 1029, 1030, 1031, 1032, 1033, 1034, 1035, 1036, 1037, 1038, 1039, 1040, 1041]", "at most 16"},
	} {
		l, err := Parse(KindGlobal, "g.toml", []byte(tc.toml))
		msg := ""
		if err != nil {
			msg = err.Error()
		} else {
			for _, e := range validate(l) {
				msg += e.Error() + "\n"
			}
		}
		if (tc.want == "") != (msg == "") || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: errors %q, want %q", tc.toml, msg, tc.want)
		}
	}
	proj, err := Parse(KindProject, "/p/.corral.toml", []byte("host_ports = [63342]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if errs, _ := checkProject(proj, Config{}, PolicyInput{ProjectDir: "/p", TrustedPath: "/t.toml", HostCPUs: 8}); len(errs) != 1 ||
		!strings.Contains(errs[0].Error(), "host_ports") {
		t.Errorf("a repository set host_ports: %v", errs)
	}
	broker, full := NetworkBroker, NetworkFull
	if got := (Effective{Config: Config{Network: &broker, HostPorts: []int{9229, 63342, 9229}}}.Settings()).BridgedPorts(); !slices.Equal(got, []int{9229, 63342}) {
		t.Errorf("BridgedPorts = %v", got)
	}
	if got := (Effective{Config: Config{Network: &full, HostPorts: []int{9229}}}.Settings()).BridgedPorts(); got != nil {
		t.Errorf("full network bridges %v", got)
	}
}
