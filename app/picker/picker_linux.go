package picker

import (
	"context"
	"fmt"

	"github.com/godbus/dbus/v5"
)

// New returns the Linux picker: the desktop portal, then zenity, then
// kdialog.
func New() Picker { return Chain{sessionPortal{}, Zenity(), Kdialog()} }

// sessionPortal is Portal on a private connection to the session bus,
// opened per Pick (a chooser is rare; a held connection is not worth it).
type sessionPortal struct{}

func (sessionPortal) Pick(ctx context.Context) (string, error) {
	conn, err := dbus.ConnectSessionBus(dbus.WithContext(ctx))
	if err != nil {
		return "", fmt.Errorf("%w: no D-Bus session bus: %v", ErrUnavailable, err)
	}
	defer conn.Close()
	return Portal{Conn: conn}.Pick(ctx)
}
