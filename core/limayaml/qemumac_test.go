package limayaml

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/config"
)

// vm_type = "qemu" on a Mac renders a template Lima's qemu driver accepts
// off Linux: mountType 9p, not the vz default virtiofs.
func TestRenderQemuOnMac(t *testing.T) {
	g := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(g, []byte(`vm_type = "qemu"`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    config.Platform
		want []string
	}{
		{config.Platform{OS: "darwin", Arch: "arm64"}, []string{"vmType: qemu\n", "arch: aarch64\n", "mountType: 9p\n"}},
		{config.Platform{OS: "darwin", Arch: "amd64"}, []string{"vmType: qemu\n", "arch: x86_64\n", "mountType: 9p\n"}},
	} {
		res, err := config.Load(config.Request{Platform: tc.p, GlobalPath: g})
		if err != nil {
			t.Fatal(err)
		}
		r, err := Render(Input{Platform: tc.p, Settings: res.Settings(), Box: "web-3f2a1c", ProjectDir: "/Users/dev/src/web",
			BrokerHost: "192.168.5.2", BrokerPort: 42123, User: "dev"})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(r.YAML), w) {
				t.Errorf("%s/%s: template lacks %q", tc.p.OS, tc.p.Arch, w)
			}
		}
		if strings.Contains(string(r.YAML), "virtiofs") {
			t.Errorf("%s/%s: virtiofs with qemu", tc.p.OS, tc.p.Arch)
		}
	}
}
