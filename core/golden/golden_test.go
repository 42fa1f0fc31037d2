package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
)

// TestVariant: a golden gets the network only when something must be
// downloaded, and never the per-boot sudo setting; the box's own config
// is left as it was.
func TestVariant(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	r, err := boxmeta.Resolve(l, boxmeta.ResolveOptions{Dir: t.TempDir(), Platform: config.Platform{OS: "linux", Arch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "image.qcow2")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	shell, yes, broker := "shell", true, config.NetworkBroker
	for _, tt := range []struct {
		name   string
		change func(*config.Config)
		want   config.Network
	}{
		{"a downloaded cloud image", func(c *config.Config) { c.Agent = &shell }, config.NetworkFull},
		{"an image, nothing to install", func(c *config.Config) { c.Image, c.Agent = &img, &shell }, config.NetworkOffline},
		{"an image and packages", func(c *config.Config) { c.Image, c.Agent, c.Packages = &img, &shell, []string{"jq"} }, config.NetworkFull},
	} {
		v := r
		c := v.Loaded.Config
		c.Sudo, c.Network = &yes, &broker
		tt.change(&c)
		v.Loaded.Config = c
		g, err := Variant(v)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := g.Loaded.Config; got.Network == nil || *got.Network != tt.want || got.Sudo != nil {
			t.Errorf("%s: network %v, sudo %v; want %s and no sudo", tt.name, got.Network, got.Sudo, tt.want)
		}
		if *v.Loaded.Config.Network != broker || v.Loaded.Config.Sudo == nil {
			t.Errorf("%s: Variant changed the box's own config", tt.name)
		}
	}
}

// TestName: one name per template, recognised by Is.
func TestName(t *testing.T) {
	a, b := Name([]byte("vmType: qemu\n")), Name([]byte("vmType: vz\n"))
	if !strings.HasPrefix(a, Prefix) || len(a) != len(Prefix)+12 || !Is(a) || a == b || a != Name([]byte("vmType: qemu\n")) {
		t.Errorf("Name: %s, %s", a, b)
	}
	if Is("web-1a2b3c") {
		t.Error("a box's name taken for a golden's")
	}
}
