package app

import (
	"errors"
	"strings"
	"testing"
)

func TestGUISessionError(t *testing.T) {
	if err := guiSessionError(true, "10.0.0.1 5000 10.0.0.2 22"); err != nil {
		t.Errorf("GUI session refused: %v", err)
	}
	err := guiSessionError(false, "10.0.0.1 5000 10.0.0.2 22")
	var h interface{ Hint() string }
	if !errors.Is(err, ErrNoWindowServer) || !errors.As(err, &h) || !strings.Contains(h.Hint(), "over ssh") {
		t.Errorf("over ssh: %v", err)
	}
	if err := guiSessionError(false, ""); err == nil || !errors.As(err, &h) || strings.Contains(h.Hint(), "ssh") {
		t.Errorf("no session, no ssh: %v", err)
	}
	if got, want := err.Error()+"\n"+h.Hint(), "starting the menu-bar app: no window server session (it needs a macOS login session)\nopen Corral.app from Finder"; !strings.HasPrefix(got, want) {
		t.Errorf("errorText = %q", got)
	}
}
