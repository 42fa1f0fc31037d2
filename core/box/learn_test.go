package box

import (
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/config"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// learnsNow: --learn always learns (in broker mode, not under strict);
// network = "learn" starts one window only, the first time.
func TestLearnsNow(t *testing.T) {
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	resolved := func(network config.Network, profile config.Profile) boxmeta.Resolved {
		c := config.Config{Network: &network, Profile: &profile}
		return boxmeta.Resolved{Project: project.Project{Box: "web-3f2a1c"}, Loaded: config.Result{Effective: config.Effective{Config: c}}}
	}
	for _, tc := range []struct {
		network config.Network
		profile config.Profile
		learn   bool
		want    bool
		err     string
	}{
		{"broker", "default", false, false, ""},
		{"broker", "default", true, true, ""},
		{"learn", "default", false, true, ""},
		{"full", "default", true, false, `learning needs network = "broker"`},
		{"offline", "default", true, false, `learning needs network = "broker"`},
		{"broker", "strict", true, false, "the strict profile refuses learning"},
	} {
		got, err := learnsNow(l, resolved(tc.network, tc.profile), UpOptions{Learn: tc.learn})
		if got != tc.want || (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s/%s learn=%v: %v, %v", tc.network, tc.profile, tc.learn, got, err)
		}
	}
	// A window that ended is not restarted by the config, only by --learn.
	if _, err := approval.StartLearning(l, "web-3f2a1c", time.Minute, time.Now().Add(-time.Hour), audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	if got, err := learnsNow(l, resolved("learn", "default"), UpOptions{}); got || err != nil {
		t.Errorf("network = learn after a window: %v, %v", got, err)
	}
	if got, _ := learnsNow(l, resolved("learn", "default"), UpOptions{Learn: true}); !got {
		t.Error("--learn after a window does not learn")
	}
}
