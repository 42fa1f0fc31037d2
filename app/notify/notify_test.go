package notify

import (
	"strings"
	"testing"
	"time"
)

func TestCooldown(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := &Cooldown{Period: 10 * time.Minute, Now: func() time.Time { return now }}
	steps := []struct {
		after     time.Duration
		box, host string
		want      bool
	}{
		{0, "web", "a.example.test", true},
		{0, "web", "a.example.test", false},               // retry loop, same instant
		{9 * time.Minute, "web", "a.example.test", false}, // still cooling down
		{0, "web", "b.example.test", true},                // other host
		{0, "api", "a.example.test", true},                // other box
		{time.Minute, "web", "a.example.test", true},      // 10 min after the first
		{time.Minute, "web", "a.example.test", false},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if got := c.Allow(s.box, s.host); got != s.want {
			t.Errorf("step %d: Allow(%s, %s) = %v, want %v", i, s.box, s.host, got, s.want)
		}
	}
	c.Reset("web", "a.example.test")
	if !c.Allow("web", "a.example.test") {
		t.Error("Allow after Reset = false")
	}
}

func TestAuthorizationProblem(t *testing.T) {
	for _, tc := range []struct {
		granted bool
		domain  string
		code    int
		want    string
	}{
		{true, "", 0, ""},
		{false, "UNErrorDomain", 1, "Apple Development or Developer ID"},
		{false, "NSCocoaErrorDomain", 4099, "NSCocoaErrorDomain 4099: the reason"},
		{false, "", 0, "System Settings › Notifications › Corral"},
	} {
		got := AuthorizationProblem(tc.granted, tc.domain, tc.code, "the reason")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q", tc, got)
		}
	}
}

// Informational notifications carry no actions and never replace one
// another; a denial replaces the earlier one for its (box, host).
func TestKindActionsAndIDs(t *testing.T) {
	if a := KindInfo.actions(); len(a) != 0 {
		t.Errorf("info actions %q", a)
	}
	if a := KindDenied.actions(); len(a) != 4 || a[0] != ActionAllow || a[2] != ActionAllowOnce {
		t.Errorf("denied actions %q", a)
	}
	i := Notification{Kind: KindInfo, Box: "b"}
	if i.id() == i.id() {
		t.Error("two info notifications share an id")
	}
	d := Notification{Box: "b", Host: "h"}
	if d.id() != d.id() {
		t.Error("a denial's id changes")
	}
}
