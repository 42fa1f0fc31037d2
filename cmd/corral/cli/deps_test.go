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

// darwinKitAllowed are the darwinkit packages a darwin corral may link:
// the Objective-C runtime bridge (objc, with its libffi binding) and
// Grand Central Dispatch's main queue. Every AppKit, Foundation or
// UserNotifications call goes through objc.GetClass and objc.Call
// (app/picker/picker_darwin.go, app/notify/un_darwin.go).
var darwinKitAllowed = map[string]bool{
	"github.com/progrium/darwinkit/objc":     true,
	"github.com/progrium/darwinkit/objc/ffi": true,
	"github.com/progrium/darwinkit/dispatch": true,
}

// TestDependenciesDarwinKit keeps darwinkit's framework packages out of
// the darwin binary. The app and the CLI are one binary, so what it links
// every corral process loads, `corral version` included: each
// darwinkit/macos/* package adds a `-framework` load and runs
// objc_getClass for each of its classes at init (macos/appkit and
// macos/foundation alone: about 560 calls), and macos/appkit drags in
// CloudKit, CoreML, Metal, CoreImage, CoreData, QuartzCore and more.
// docs/PLATFORMS.md says how to measure start-up on a Mac.
func TestDependenciesDarwinKit(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/corral-dev/corral/cmd/corral")
	cmd.Env = append(cmd.Environ(), "GOOS=darwin", "GOARCH=arm64", "CGO_ENABLED=1", "CC=/nonexistent")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var seen int
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, "github.com/progrium/darwinkit/") {
			continue
		}
		seen++
		if !darwinKitAllowed[dep] {
			t.Errorf("the darwin corral binary links %s: each darwinkit framework package adds a framework load and its class lookups at init to every corral process, even `corral version`; call the API through darwinkit/objc (objc.GetClass, objc.Call) as app/picker/picker_darwin.go does, or add the package to darwinKitAllowed with the start-up it costs (docs/PLATFORMS.md)", dep)
		}
	}
	if seen == 0 {
		t.Error("no darwinkit package in the darwin dependencies of cmd/corral: the test no longer sees the app (a moved package?)")
	}
}
