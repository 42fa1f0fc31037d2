package picker

// NSOpenPanel is AppKit's. It is reached through darwinkit's objc package
// (objc.GetClass, objc.Call), not its macos/appkit package: importing that
// package links about twenty frameworks (CloudKit, CoreML, Metal,
// CoreImage, CoreData, QuartzCore, …) and runs several hundred
// objc_getClass calls at init in every corral process, `corral version`
// included (cmd/corral/cli TestDependenciesDarwinKit keeps it so). AppKit
// itself is linked here so that the class is registered whether or not
// another package links it (fyne.io/systray links Cocoa).

/*
#cgo LDFLAGS: -framework AppKit
*/
import "C"

import (
	"context"
	"fmt"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/objc"
)

// New returns the macOS picker: an NSOpenPanel for one folder.
func New() Picker { return openPanel{} }

// openPanel shows NSOpenPanel as a modeless window
// (beginWithCompletionHandler:) from the main thread, which AppKit
// requires, reached through darwinkit's main-queue dispatch; Pick waits on
// a channel off the main thread. Modeless, not runModal: a modal loop
// inside a main-queue block would hold every other main-queue block (the
// notifications') until the user answered. The menu-bar app is an
// accessory app, so it activates itself first or the panel would open
// behind other windows. The panel is retained until its handler ran.
// What the panel is asked for and how its answer maps to Pick's result
// are panelSettings and panelAnswer (panel.go, tested on every platform).
type openPanel struct{}

var _ Picker = openPanel{}

type answer struct {
	dir string
	err error
}

func (openPanel) Pick(ctx context.Context) (string, error) {
	panelClass := objc.GetClass("NSOpenPanel")
	if panelClass.Ptr() == nil {
		return "", fmt.Errorf("%w: AppKit's NSOpenPanel is not loaded", ErrUnavailable)
	}
	done := make(chan answer, 1)
	dispatch.MainQueue().DispatchAsync(func() {
		app := objc.Call[objc.Object](objc.GetClass("NSApplication"), objc.Sel("sharedApplication"))
		objc.Call[objc.Void](app, objc.Sel("activateIgnoringOtherApps:"), true)
		p := objc.Call[objc.Object](panelClass, objc.Sel("openPanel"))
		for _, s := range panelSettings {
			objc.Call[objc.Void](p, objc.Sel(s.selector), s.value)
		}
		p.Retain()
		// The block's argument is an NSModalResponse (NSInteger).
		objc.Call[objc.Void](p, objc.Sel("beginWithCompletionHandler:"), func(r int) {
			defer p.Release()
			var paths []string
			for _, u := range objc.Call[[]objc.Object](p, objc.Sel("URLs")) {
				paths = append(paths, objc.Call[string](u, objc.Sel("path")))
			}
			dir, err := panelAnswer(r, paths)
			done <- answer{dir: dir, err: err}
		})
	})
	select {
	case a := <-done:
		return a.dir, a.err
	case <-ctx.Done():
		// The panel stays until the user closes it; its answer is dropped.
		return "", ctx.Err()
	}
}
