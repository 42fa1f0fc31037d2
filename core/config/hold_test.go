package config

import (
	"strings"
	"testing"
	"time"
)

func TestHoldDeniedBounds(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want time.Duration
		bad  string // "" accepts
	}{
		{`"30s"`, 30 * time.Second, ""},
		{`"0"`, 0, ""},
		{`"10m"`, 10 * time.Minute, ""},
		{`"11m"`, 0, "must be between 0 and 10m0s"},
		{`"-1s"`, 0, "must not be negative"},
		{`"soon"`, 0, "invalid duration"},
	} {
		l, err := Parse(KindGlobal, "g.toml", []byte("hold_denied = "+tc.v+"\n"))
		if err == nil {
			if errs := validate(l); len(errs) > 0 {
				err = errs[0]
			}
		}
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("hold_denied = %s: %v", tc.v, err)
		case tc.bad == "" && l.Config.HoldDenied.Duration != tc.want:
			t.Errorf("hold_denied = %s: %v", tc.v, l.Config.HoldDenied.Duration)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("hold_denied = %s: %v, want %q", tc.v, err, tc.bad)
		}
	}
}
