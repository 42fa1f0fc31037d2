package cli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies keeps core and the CLI free of the GUI libraries: the
// app is a thin client over core, never the other way round.
func TestDependencies(t *testing.T) {
	forbidden := []string{"fyne.io/systray", "github.com/progrium/darwinkit"}
	for _, goos := range []string{"linux", "darwin"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}",
			"github.com/corral-dev/corral/core/...", "github.com/corral-dev/corral/cmd/corral/cli")
		cmd.Env = append(cmd.Environ(), "GOOS="+goos, "CGO_ENABLED=1", "CC=/nonexistent")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list (%s): %v", goos, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range forbidden {
				if strings.HasPrefix(dep, f) {
					t.Errorf("%s: core or the CLI depends on %s", goos, dep)
				}
			}
		}
	}
}
