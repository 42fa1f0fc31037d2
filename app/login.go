package app

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/app/menu"
)

// LoginItem is the app's "Open at login" switch: on macOS 13+ the main
// app's SMAppService (login_darwin.go). The idle sweep and the denial
// notifications work only while the app runs, so it is offered in the menu.
type LoginItem interface {
	State() (menu.LoginState, error)
	SetEnabled(on bool) error
}

// noLogin is the LoginItem where there is none (Linux starts the app
// through /etc/xdg/autostart; see docs/PLATFORMS.md).
type noLogin struct{}

func (noLogin) State() (menu.LoginState, error) { return menu.LoginUnsupported, nil }
func (noLogin) SetEnabled(bool) error           { return errors.New("no login item on this platform") }

// SMAppService.Status values (ServiceManagement, macOS 13).
const (
	smNotRegistered    = 0
	smEnabled          = 1
	smRequiresApproval = 2
	smNotFound         = 3
)

// loginStateOf maps an SMAppService status to the menu's state. NotFound
// (a binary outside an app bundle, e.g. `corral app` from a build tree)
// and anything unknown show no menu entry.
func loginStateOf(status int) menu.LoginState {
	switch status {
	case smNotRegistered:
		return menu.LoginOff
	case smEnabled:
		return menu.LoginOn
	case smRequiresApproval:
		return menu.LoginNeedsApproval
	}
	return menu.LoginUnsupported
}

// wantLogin is what a click on "Open at login" asks for: off when it is
// on or waiting for approval (unregistering withdraws the request), else on.
func wantLogin(s menu.LoginState) bool {
	return s != menu.LoginOn && s != menu.LoginNeedsApproval
}

// starterConfig is what "Open config" writes when the user config does not
// exist yet (a fresh install): comments only, which is valid, empty TOML.
const starterConfig = `# corral user config (the trusted layer). Keys and their meaning:
# corral config show --origin, and docs/CONFIG.md. Changes apply to new
# sessions; corral config check says what is wrong.
`

// ensureConfigFile creates path (0600, its directory 0700) with
// starterConfig when it does not exist, so that the opener has a file to
// open; an existing file is left alone.
func ensureConfigFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	if _, err := f.WriteString(starterConfig); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Close()
}

// notifierSetupText is the menu's error line when notifications could not
// be set up: denials then show in the menu only.
func notifierSetupText(err error) string {
	return errorText("notifications unavailable (denied hosts show in this menu only)", err)
}
