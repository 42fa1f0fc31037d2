package app

import (
	"fmt"

	"github.com/godbus/dbus/v5"
)

// preflight checks that the session bus systray needs is there: without
// it systray logs and then crashes on Quit (v1.12.0 closes a nil conn).
func preflight() error {
	if _, err := dbus.SessionBus(); err != nil {
		return fmt.Errorf("connecting to the D-Bus session bus: %w\nthe menu-bar app needs a desktop session (DBUS_SESSION_BUS_ADDRESS)", err)
	}
	return nil
}
