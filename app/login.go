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

// loginStateOf maps an SMAppService status to the menu's state. bundled
// says whether the running program has a bundle identifier (it runs from
// Corral.app). macOS reports NotFound for the main app of a fresh install
// until it is first registered, so NotFound with a bundle id is "off"
// (the user can tick it); without one (`corral app` from a build tree,
// which cannot be a login item) it shows no entry, as does anything
// unknown (-1: macOS before 13).
func loginStateOf(status int, bundled bool) menu.LoginState {
	switch status {
	case smNotRegistered:
		return menu.LoginOff
	case smEnabled:
		return menu.LoginOn
	case smRequiresApproval:
		return menu.LoginNeedsApproval
	case smNotFound:
		if bundled {
			return menu.LoginOff
		}
	}
	return menu.LoginUnsupported
}

// loginOutcome is what a click on "Open at login" reports: the error of
// registering (or unregistering) itself, which names what macOS said;
// else, when macOS answered without error but the state read afterwards
// is not what was asked for, an error saying so, with where to look.
// nil when the state is as asked (NeedsApproval counts as on: macOS shows
// its own notice and the menu says where to allow it).
func loginOutcome(want bool, setErr error, st menu.LoginState, stErr error) error {
	verb := "registering Corral as a login item"
	if !want {
		verb = "removing Corral from the login items"
	}
	switch {
	case setErr != nil:
		return fmt.Errorf("%s: %w", verb, setErr)
	case stErr != nil:
		return fmt.Errorf("%s: reading the state afterwards: %w", verb, stErr)
	case want && st != menu.LoginOn && st != menu.LoginNeedsApproval:
		return fmt.Errorf("%s: macOS reported no error but does not list it (%s); check System Settings › General › Login Items", verb, loginStateName(st))
	case !want && (st == menu.LoginOn || st == menu.LoginNeedsApproval):
		return fmt.Errorf("%s: macOS reported no error but still lists it (%s); check System Settings › General › Login Items", verb, loginStateName(st))
	}
	return nil
}

// loginStateName names a state in an error line.
func loginStateName(st menu.LoginState) string {
	switch st {
	case menu.LoginOff:
		return "not registered"
	case menu.LoginOn:
		return "enabled"
	case menu.LoginNeedsApproval:
		return "waiting for approval"
	}
	return "not found"
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
