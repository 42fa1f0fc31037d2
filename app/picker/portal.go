package picker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
)

// The XDG desktop portal's FileChooser (flatpak.github.io/xdg-desktop-portal,
// org.freedesktop.portal.FileChooser and org.freedesktop.portal.Request).
const (
	portalName    = "org.freedesktop.portal.Desktop"
	portalPath    = dbus.ObjectPath("/org/freedesktop/portal/desktop")
	chooserIface  = "org.freedesktop.portal.FileChooser"
	requestIface  = "org.freedesktop.portal.Request"
	requestPrefix = "/org/freedesktop/portal/desktop/request/"
)

// Portal response codes (Request.Response).
const (
	portalSuccess   = 0
	portalCancelled = 1
)

// Portal chooses a folder through the desktop portal on Conn:
// FileChooser.OpenFile with directory = true. The portal answers with a
// Response signal on a Request object; its path is known before the call
// (from our unique name and a handle_token), so the signal is subscribed
// to first and an answer that comes before the call returns is not lost.
type Portal struct {
	Conn *dbus.Conn
}

var _ Picker = Portal{}

// RequestPath is the Request object the portal uses for a call from the
// connection with unique name sender and the given handle_token.
func RequestPath(sender, token string) dbus.ObjectPath {
	s := strings.ReplaceAll(strings.TrimPrefix(sender, ":"), ".", "_")
	return dbus.ObjectPath(requestPrefix + s + "/" + token)
}

// Pick shows the portal's folder chooser and waits for the answer.
func (p Portal) Pick(ctx context.Context) (string, error) {
	var has bool
	if err := p.Conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, portalName).Store(&has); err != nil || !has {
		// Not activatable either when no one owns it and no service
		// file names it; a start attempt would only time out.
		var names []string
		if err := p.Conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err != nil || !contains(names, portalName) {
			return "", fmt.Errorf("%w: no desktop portal on the session bus", ErrUnavailable)
		}
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	token := "corral" + hex.EncodeToString(rnd[:])
	want := RequestPath(p.Conn.Names()[0], token)

	sigs := make(chan *dbus.Signal, 4)
	p.Conn.Signal(sigs)
	defer p.Conn.RemoveSignal(sigs)
	match := []dbus.MatchOption{dbus.WithMatchObjectPath(want), dbus.WithMatchInterface(requestIface), dbus.WithMatchMember("Response")}
	if err := p.Conn.AddMatchSignalContext(ctx, match...); err != nil {
		return "", fmt.Errorf("choosing a folder: subscribing to the portal's answer: %w", err)
	}
	defer p.Conn.RemoveMatchSignal(match...) //nolint:errcheck // best effort on the way out

	opts := map[string]dbus.Variant{
		"handle_token": dbus.MakeVariant(token),
		"directory":    dbus.MakeVariant(true),
		"modal":        dbus.MakeVariant(false),
		"accept_label": dbus.MakeVariant(AcceptLabel),
	}
	var handle dbus.ObjectPath
	call := p.Conn.Object(portalName, portalPath).CallWithContext(ctx, chooserIface+".OpenFile", 0, "", Title, opts)
	if err := call.Store(&handle); err != nil {
		var de dbus.Error
		if errors.As(err, &de) && (de.Name == "org.freedesktop.DBus.Error.UnknownMethod" || de.Name == "org.freedesktop.DBus.Error.ServiceUnknown" || de.Name == "org.freedesktop.DBus.Error.UnknownInterface") {
			return "", fmt.Errorf("%w: the desktop portal has no FileChooser (%s)", ErrUnavailable, de.Name)
		}
		return "", fmt.Errorf("choosing a folder through the desktop portal: %w", err)
	}
	for {
		select {
		case <-ctx.Done():
			// Dismiss the dialog; the answer no longer matters.
			_ = p.Conn.Object(portalName, handle).Call(requestIface+".Close", dbus.FlagNoReplyExpected).Err
			return "", ctx.Err()
		case s := <-sigs:
			if s == nil || (s.Path != handle && s.Path != want) || s.Name != requestIface+".Response" {
				continue
			}
			return portalAnswer(s.Body)
		}
	}
}

// portalAnswer reads a Response signal's body: (u response, a{sv} results)
// with results["uris"] an array of file URIs.
func portalAnswer(body []any) (string, error) {
	if len(body) != 2 {
		return "", fmt.Errorf("choosing a folder: the portal answered %d values, want 2", len(body))
	}
	code, ok := body[0].(uint32)
	if !ok {
		return "", errors.New("choosing a folder: the portal's response code is not a uint32")
	}
	switch code {
	case portalSuccess:
	case portalCancelled:
		return "", ErrCancelled
	default:
		return "", fmt.Errorf("choosing a folder: the portal ended the dialog (response %d)", code)
	}
	results, ok := body[1].(map[string]dbus.Variant)
	if !ok {
		return "", errors.New("choosing a folder: the portal's results are not a{sv}")
	}
	uris, ok := results["uris"].Value().([]string)
	if !ok || len(uris) != 1 {
		return "", fmt.Errorf("choosing a folder: the portal returned %d folders, want 1", len(uris))
	}
	return FileURIPath(uris[0])
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
