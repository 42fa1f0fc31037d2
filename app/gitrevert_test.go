package app_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/app"
)

// TestGitRevertText: box-derived text is escaped, long change lists are
// cut (the audit log has them all), and a failed revert says so.
func TestGitRevertText(t *testing.T) {
	for _, tt := range []struct {
		r           app.GitRevert
		title, body string
	}{
		{app.GitRevert{Box: "web-1", Project: "/p", Changes: []string{"modified config"}},
			"corral reverted a change to /p/.git",
			"corral reverted a change to /p/.git made while box web-1 could write it: modified config"},
		{app.GitRevert{Box: "w\nx", Project: "/p\x07", Changes: []string{"added hooks/pre-commit\r", "a", "b", "c", "d"}},
			`corral reverted a change to /p\x07/.git`,
			`corral reverted a change to /p\x07/.git made while box w\nx could write it: added hooks/pre-commit\r; a; b; and 2 more (corral audit)`},
		{app.GitRevert{Box: "web-1", Project: "/p", Changes: []string{"removed config"}, Err: errors.New("permission denied")},
			"corral could not revert a change to /p/.git",
			"Box web-1 could write /p/.git and changed it: removed config. Reverting failed: permission denied. Do not run git there; run corral doctor."},
	} {
		title, body := app.GitRevertText(tt.r)
		if title != tt.title || body != tt.body {
			t.Errorf("GitRevertText(%+v)\n = %q\n   %q\nwant %q\n   %q", tt.r, title, body, tt.title, tt.body)
		}
		if strings.ContainsAny(title+body, "\n\r\x07") {
			t.Errorf("control character shown: %q %q", title, body)
		}
	}
}
