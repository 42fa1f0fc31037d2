package broker

import (
	"context"
	"os"
	"os/signal"
	"runtime"
	"syscall"
)

// Serve is the broker mode of the corral binary (`corral broker`, which
// corral starts per box): Run until SIGINT or SIGTERM.
func Serve(o Options) error {
	// fyne.io/systray's package initialiser locks the main goroutine to the
	// main thread for the menu-bar app (AppKit wants it there). The broker
	// has no UI and serves its listener on this goroutine: locked, every
	// wake-up of the accept loop hands the P between two threads (measured
	// as stoplockedm/startlockedm in the CONNECT path's profile). Release it.
	runtime.UnlockOSThread()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, o)
}
