package broker

import (
	"testing"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
)

func TestWatchesGitNames(t *testing.T) {
	for _, c := range []struct {
		m    boxmeta.Meta
		goos string
		want bool
	}{
		{boxmeta.Meta{Project: "/p", VMType: config.VMTypeQEMU}, "linux", false}, // the name rule refuses
		{boxmeta.Meta{Project: "/p", VMType: config.VMTypeQEMU, GitShadowOff: true}, "linux", true},
		{boxmeta.Meta{Project: "/p", VMType: config.VMTypeVZ}, "darwin", true},
		{boxmeta.Meta{Project: "/p", VMType: config.VMTypeQEMU}, "darwin", true},
		{boxmeta.Meta{Project: "/p", VMType: config.VMTypeVZ, Source: config.SourceClone}, "darwin", false},
		{boxmeta.Meta{VMType: config.VMTypeVZ}, "darwin", false},
	} {
		if got := watchesGitNames(c.m, c.goos); got != c.want {
			t.Errorf("%+v on %s: %v, want %v", c.m, c.goos, got, c.want)
		}
	}
}
