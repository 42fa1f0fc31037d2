package picker

// NSOpenPanel is AppKit's. It is reached through darwinkit's objc package
// (objc.GetClass, objc.Call), not its macos/appkit package: importing that
// package links about twenty frameworks (CloudKit, CoreML, Metal,
// CoreImage, CoreData, QuartzCore, …) and runs several hundred
// objc_getClass calls at init in every corral process, `corral version`
// included (cmd/corral/cli TestDependenciesDarwinKit keeps it so). AppKit
// itself is linked here so that the class is registered whether or not
// another package links it (fyne.io/systray links Cocoa).
//
// The completion handler is a block the compiler makes
// (corral_panel_begin), not one darwinkit builds from a Go func: AppKit
// keeps the handler after beginWithCompletionHandler: returns, and
// darwinkit v0.5.0's dispose helper for its Go blocks reads memory it has
// just freed when the block is released. The block calls back into Go
// through an exported function (export_darwin.go) with a
// cgo.Handle of the answer channel, deleted there once.

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework AppKit
#import <AppKit/AppKit.h>
#include <stdint.h>

extern void corralPanelDone(uintptr_t h, long response, int n, char *path);

// corral_panel_begin begins the panel modelessly; its handler reports
// the response, the number of URLs and the first one's path. The block
// holds the panel (ARC) until it has run.
static void corral_panel_begin(void *panel, uintptr_t h) {
	NSOpenPanel *p = (__bridge NSOpenPanel *)panel;
	[p beginWithCompletionHandler:^(NSModalResponse r) {
		NSArray<NSURL *> *urls = p.URLs;
		const char *path = urls.count > 0 ? urls[0].path.UTF8String : NULL;
		corralPanelDone(h, (long)r, (int)urls.count, (char *)path);
	}];
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/cgo"

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
// accessory app, so it activates itself first (activationSelector) or the
// panel would open behind other windows. What the panel is asked for and
// how its answer maps to Pick's result are panelSettings and panelAnswer
// (panel.go, tested on every platform).
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
	done := make(chan answer, 1) // buffered: the handler never waits for Pick
	dispatch.MainQueue().DispatchAsync(func() {
		app := objc.Call[objc.Object](objc.GetClass("NSApplication"), objc.Sel("sharedApplication"))
		sel, withYES := activationSelector(app.RespondsToSelector(objc.Sel("activate")))
		if withYES {
			objc.Call[objc.Void](app, objc.Sel(sel), true)
		} else {
			objc.Call[objc.Void](app, objc.Sel(sel))
		}
		p := objc.Call[objc.Object](panelClass, objc.Sel("openPanel"))
		for _, s := range panelSettings {
			objc.Call[objc.Void](p, objc.Sel(s.selector), s.value)
		}
		C.corral_panel_begin(p.Ptr(), C.uintptr_t(cgo.NewHandle(done)))
	})
	select {
	case a := <-done:
		return a.dir, a.err
	case <-ctx.Done():
		// The panel stays until the user closes it; its answer is dropped.
		return "", ctx.Err()
	}
}

// panelDone delivers the panel's answer to the Pick that opened it (h
// holds its channel) and deletes h: the handler runs once.
func panelDone(h cgo.Handle, response int, n int, path *C.char) {
	done := h.Value().(chan answer)
	h.Delete()
	var paths []string
	if n > 0 && path != nil {
		paths = append(paths, C.GoString(path))
	}
	for i := 1; i < n; i++ {
		paths = append(paths, "") // more than one: panelAnswer refuses the count
	}
	dir, err := panelAnswer(response, paths)
	done <- answer{dir: dir, err: err}
}
