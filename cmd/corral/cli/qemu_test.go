package cli

import (
	"os"
	"testing"

	"github.com/corral-dev/corral/core/paths"
	"go.yaml.in/yaml/v3"
)

// TestRenderNoWayOut checks the Lima side of the funnel on
// Linux/qemu: in broker and offline mode the host resolver is off (its DNS
// would be a path out) and every guest listener is ignored by Lima's port
// forwarding, and the guest's broker address is the guestfwd one.
func TestRenderNoWayOut(t *testing.T) {
	for _, tt := range []struct{ network, proxyHost string }{
		{"broker", "192.168.5.4"},
		{"offline", "192.168.5.4"},
		{"full", "192.168.5.2"},
	} {
		t.Run(tt.network, func(t *testing.T) {
			e := setup(t, "")
			l := paths.Layout{Home: e.home}
			if err := l.Ensure(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(l.ProjectConfig(e.box), []byte("network = \""+tt.network+"\"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := run(t, e, false, "render")
			if code != 0 {
				t.Fatalf("render: %d %s", code, errOut)
			}
			var tmpl struct {
				VMType       string `yaml:"vmType"`
				HostResolver struct {
					Enabled bool `yaml:"enabled"`
				} `yaml:"hostResolver"`
				PortForwards []struct {
					GuestIP string `yaml:"guestIP"`
					Proto   string `yaml:"proto"`
					Ignore  bool   `yaml:"ignore"`
				} `yaml:"portForwards"`
				Param map[string]string `yaml:"param"`
			}
			if err := yaml.Unmarshal([]byte(out), &tmpl); err != nil {
				t.Fatal(err)
			}
			if tmpl.VMType != "qemu" || tmpl.Param["NETWORK"] != tt.network {
				t.Fatalf("vmType %q network %q", tmpl.VMType, tmpl.Param["NETWORK"])
			}
			if got := tmpl.Param["PROXY_HOST"]; got != tt.proxyHost {
				t.Errorf("PROXY_HOST = %q, want %q", got, tt.proxyHost)
			}
			if tt.network != "full" && tmpl.HostResolver.Enabled {
				t.Error("host resolver enabled")
			}
			ignored := map[string]bool{}
			for _, pf := range tmpl.PortForwards {
				if pf.Ignore && pf.Proto == "any" {
					ignored[pf.GuestIP] = true
				}
			}
			if len(tmpl.PortForwards) != 2 || !ignored["127.0.0.1"] || !ignored["0.0.0.0"] {
				t.Errorf("portForwards %+v: want ignore rules for 127.0.0.1 and 0.0.0.0 and nothing else", tmpl.PortForwards)
			}
		})
	}
}
