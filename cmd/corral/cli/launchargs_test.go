package cli

import (
	"slices"
	"testing"
)

func TestLaunchArgs(t *testing.T) {
	const bundle = "/Applications/Corral.app/Contents/MacOS/corral"
	for _, tc := range []struct {
		name string
		argv []string
		want []string
	}{
		{"finder", []string{bundle}, []string{"app"}},
		{"first launch of a quarantined app", []string{bundle, "-psn_0_1234567"}, []string{"app"}},
		{"psn among real arguments", []string{bundle, "-psn_0_42", "version"}, []string{"version"}},
		{"cli from the bundle", []string{bundle, "ls"}, []string{"ls"}},
		{"plain cli", []string{"/usr/local/bin/corral", "ls", "-v"}, []string{"ls", "-v"}},
		{"plain cli, no args", []string{"corral"}, []string{}},
		{"psn outside a bundle is still dropped", []string{"corral", "-psn_0_1"}, []string{}},
		{"a similar flag is kept", []string{"corral", "--psn_0_1"}, []string{"--psn_0_1"}},
		{"empty argv", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := LaunchArgs(tc.argv)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("LaunchArgs(%q) = %q, want %q", tc.argv, got, tc.want)
			}
		})
	}
}
