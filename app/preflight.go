package app

import (
	"errors"
	"fmt"
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
	hint := "open Corral.app from Finder (or run `open -a Corral`) in the Mac's own login session"
	if sshConn != "" {
		hint = "this shell came in over ssh; " + hint + ", or run `corral app` in Terminal on the Mac itself"
	}
	return &hintError{err: fmt.Errorf("starting the menu-bar app: %w (it needs a macOS login session)", ErrNoWindowServer), hint: hint}
}

// hintError carries a hint for the user beside the error.
type hintError struct {
	err  error
	hint string
}

func (h *hintError) Error() string { return h.err.Error() }
func (h *hintError) Unwrap() error { return h.err }
func (h *hintError) Hint() string  { return h.hint }
