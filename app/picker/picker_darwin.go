package picker

import (
	"context"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/appkit"
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
type openPanel struct{}

type answer struct {
	dir string
	err error
}

func (openPanel) Pick(ctx context.Context) (string, error) {
	done := make(chan answer, 1)
	dispatch.MainQueue().DispatchAsync(func() {
		appkit.Application_SharedApplication().ActivateIgnoringOtherApps(true)
		p := appkit.OpenPanel_OpenPanel()
		p.SetCanChooseDirectories(true)
		p.SetCanChooseFiles(false)
		p.SetAllowsMultipleSelection(false)
		p.SetCanCreateDirectories(true)
		p.SetMessage(Title)
		p.SetPrompt("Open in corral")
		p.Retain()
		p.BeginWithCompletionHandler(func(r appkit.ModalResponse) {
			defer p.Release()
			urls := p.URLs()
			if r != appkit.ModalResponseOK || len(urls) != 1 {
				done <- answer{err: ErrCancelled}
				return
			}
			done <- answer{dir: urls[0].Path()}
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
