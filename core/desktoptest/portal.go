package desktoptest

import (
	"fmt"
	"strings"
	"sync"

	"github.com/godbus/dbus/v5"
)

// FakePortal is a test double for the XDG desktop portal's
// org.freedesktop.portal.FileChooser. Each OpenFile is answered with a
// Request.Response signal on the Request path that the caller's
// handle_token names (/org/freedesktop/portal/desktop/request/SENDER/TOKEN,
// SENDER being the caller's unique name without ":" and with "." as "_"),
// emitted before the method returns, as a fast portal may. Code and URIs
// are the answer (0 success, 1 cancelled, 2 ended otherwise).
type FakePortal struct {
	conn *dbus.Conn

	mu    sync.Mutex
	Code  uint32
	URIs  []string
	Calls []map[string]dbus.Variant // the options of each OpenFile
}

// OpenFile is org.freedesktop.portal.FileChooser.OpenFile.
func (f *FakePortal) OpenFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	f.mu.Lock()
	f.Calls = append(f.Calls, opts)
	code, uris := f.Code, f.URIs
	f.mu.Unlock()
	token, _ := opts["handle_token"].Value().(string)
	s := strings.ReplaceAll(strings.TrimPrefix(string(sender), ":"), ".", "_")
	path := dbus.ObjectPath("/org/freedesktop/portal/desktop/request/" + s + "/" + token)
	results := map[string]dbus.Variant{}
	if uris != nil {
		results["uris"] = dbus.MakeVariant(uris)
	}
	if err := f.conn.Emit(path, "org.freedesktop.portal.Request.Response", code, results); err != nil {
		return "", dbus.MakeFailedError(err)
	}
	return path, nil
}

// Answer sets the answer of the next OpenFile calls.
func (f *FakePortal) Answer(code uint32, uris ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Code, f.URIs = code, uris
}

// Options returns the options of each OpenFile so far.
func (f *FakePortal) Options() []map[string]dbus.Variant {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]dbus.Variant(nil), f.Calls...)
}

// Close gives up the portal's name.
func (f *FakePortal) Close() { _, _ = f.conn.ReleaseName("org.freedesktop.portal.Desktop") }

// StartFakePortal claims org.freedesktop.portal.Desktop on conn.
func StartFakePortal(conn *dbus.Conn) (*FakePortal, error) {
	f := &FakePortal{conn: conn}
	if err := conn.Export(f, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.FileChooser"); err != nil {
		return nil, err
	}
	reply, err := conn.RequestName("org.freedesktop.portal.Desktop", dbus.NameFlagDoNotQueue)
	if err != nil {
		return nil, err
	}
	if reply != dbus.RequestNameReplyPrimaryOwner {
		return nil, fmt.Errorf("org.freedesktop.portal.Desktop already owned")
	}
	return f, nil
}
