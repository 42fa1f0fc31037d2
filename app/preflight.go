package app

import (
	"errors"
	"fmt"

	"github.com/corral-dev/corral/core/hint"
)

// ErrNoWindowServer means `corral app` runs outside a macOS login session
// with a window server, typically over ssh: AppKit would abort the process
// (or the icon would appear on nobody's screen).
var ErrNoWindowServer = errors.New("no window server session")

// guiSessionError is the macOS preflight's decision: gui says whether
// CGSessionCopyCurrentDictionary found a Quartz GUI session, sshConn is
// $SSH_CONNECTION (only to word the hint).
func guiSessionError(gui bool, sshConn string) error {
	if gui {
		return nil
	}
	what := "open Corral.app from Finder (or run `open -a Corral`) in the Mac's own login session"
	if sshConn != "" {
		what = "this shell came in over ssh; " + what + ", or run `corral app` in Terminal on the Mac itself"
	}
	return hint.New(fmt.Errorf("starting the menu-bar app: %w (it needs a macOS login session)", ErrNoWindowServer), what)
}
