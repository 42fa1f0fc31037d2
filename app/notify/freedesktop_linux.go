package notify

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/godbus/dbus/v5"
)

const (
	fdoName  = "org.freedesktop.Notifications"
	fdoPath  = dbus.ObjectPath("/org/freedesktop/Notifications")
	fdoIface = "org.freedesktop.Notifications"
)

// Freedesktop posts notifications through org.freedesktop.Notifications on
// the D-Bus session bus and listens for ActionInvoked.
type Freedesktop struct {
	conn    *dbus.Conn
	log     *slog.Logger
	sigs    chan *dbus.Signal
	actions chan ActionEvent
	done    chan struct{}
	once    sync.Once

	mu   sync.Mutex
	open map[uint32]Notification
}

var _ Notifier = (*Freedesktop)(nil)

// New connects to the session bus (a private connection, closed by Close)
// and returns a Notifier on it.
func New(log *slog.Logger) (Notifier, error) {
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return nil, fmt.Errorf("connecting to the D-Bus session bus for notifications: %w", err)
	}
	n, err := NewFreedesktop(conn, log)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return n, nil
}

// NewFreedesktop returns a Notifier on conn. Close closes conn.
func NewFreedesktop(conn *dbus.Conn, log *slog.Logger) (*Freedesktop, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Freedesktop{
		conn: conn, log: log,
		sigs:    make(chan *dbus.Signal, 64),
		actions: make(chan ActionEvent, 16),
		done:    make(chan struct{}),
		open:    map[uint32]Notification{},
	}
	for _, member := range []string{"ActionInvoked", "NotificationClosed"} {
		if err := conn.AddMatchSignal(dbus.WithMatchObjectPath(fdoPath), dbus.WithMatchInterface(fdoIface), dbus.WithMatchMember(member)); err != nil {
			return nil, fmt.Errorf("subscribing to notification %s signals: %w", member, err)
		}
	}
	conn.Signal(f.sigs)
	go f.recv()
	return f, nil
}

// Notify posts n with the actions "Allow" and "Allow once", or none for
// KindInfo.
func (f *Freedesktop) Notify(ctx context.Context, n Notification) error {
	// Hold mu across the call: a fast daemon may emit ActionInvoked for the
	// new id before we see the reply, and handle must not look the id up
	// until it is in open.
	f.mu.Lock()
	defer f.mu.Unlock()
	var id uint32
	call := f.conn.Object(fdoName, fdoPath).CallWithContext(ctx, fdoIface+".Notify", 0,
		"corral", uint32(0), "network-wired", n.Title, n.Body,
		n.Kind.actions(),
		map[string]dbus.Variant{"urgency": dbus.MakeVariant(byte(1))},
		int32(-1))
	if err := call.Store(&id); err != nil {
		return fmt.Errorf("posting notification for %s on box %q: %w", n.Host, n.Box, err)
	}
	if n.Kind == KindInfo {
		return nil // no action can be invoked on it
	}
	f.open[id] = n
	return nil
}

// Actions reports the actions the user picked.
func (f *Freedesktop) Actions() <-chan ActionEvent { return f.actions }

// Close stops listening and closes the connection.
func (f *Freedesktop) Close() error {
	var err error
	f.once.Do(func() {
		close(f.done)
		f.conn.RemoveSignal(f.sigs)
		err = f.conn.Close()
	})
	return err
}

func (f *Freedesktop) recv() {
	for {
		select {
		case <-f.done:
			return
		case s, ok := <-f.sigs:
			if !ok {
				return
			}
			f.handle(s)
		}
	}
}

func (f *Freedesktop) handle(s *dbus.Signal) {
	if s == nil || s.Path != fdoPath || len(s.Body) < 2 {
		return
	}
	id, ok := s.Body[0].(uint32)
	if !ok {
		return
	}
	switch s.Name {
	case fdoIface + ".ActionInvoked":
		key, _ := s.Body[1].(string)
		f.mu.Lock()
		f.deliverLocked(id, key) // ids of other apps' notifications are not in open
		f.mu.Unlock()
	case fdoIface + ".NotificationClosed":
		f.mu.Lock()
		delete(f.open, id)
		f.mu.Unlock()
	}
}

func (f *Freedesktop) deliverLocked(id uint32, key string) {
	n, ok := f.open[id]
	if !ok || (key != ActionAllow && key != ActionAllowOnce) {
		return // "default" (body click) and unknown keys do nothing
	}
	select {
	case f.actions <- ActionEvent{Box: n.Box, Host: n.Host, Action: key}:
	default:
		f.log.Warn("dropping notification action: nobody is reading", "box", n.Box, "host", n.Host, "action", key)
	}
}
