package picker_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/corral-dev/corral/app/picker"
	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/hint"
)

// fakePortal is org.freedesktop.portal.FileChooser on a private bus. It
// answers each OpenFile with a Response signal on the Request path the
// caller's handle_token names, emitted BEFORE the method returns (a real
// portal may be that fast), and records the options.
type fakePortal struct {
	conn *dbus.Conn
	code uint32
	uris []string

	mu   sync.Mutex
	opts []map[string]dbus.Variant
}

func (f *fakePortal) OpenFile(sender dbus.Sender, parent, title string, opts map[string]dbus.Variant) (dbus.ObjectPath, *dbus.Error) {
	f.mu.Lock()
	f.opts = append(f.opts, opts)
	f.mu.Unlock()
	token, _ := opts["handle_token"].Value().(string)
	path := picker.RequestPath(string(sender), token)
	results := map[string]dbus.Variant{}
	if f.uris != nil {
		results["uris"] = dbus.MakeVariant(f.uris)
	}
	if err := f.conn.Emit(path, "org.freedesktop.portal.Request.Response", f.code, results); err != nil {
		return "", dbus.MakeFailedError(err)
	}
	return path, nil
}

func startPortal(t *testing.T, addr string, f *fakePortal) {
	t.Helper()
	f.conn = desktoptest.Conn(t, addr)
	if err := f.conn.Export(f, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.FileChooser"); err != nil {
		t.Fatal(err)
	}
	if reply, err := f.conn.RequestName("org.freedesktop.portal.Desktop", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("owning the portal name: %v %v", reply, err)
	}
}

func TestPortal(t *testing.T) {
	addr := desktoptest.StartBus(t)
	dir := t.TempDir()
	tests := []struct {
		name    string
		code    uint32
		uris    []string
		want    string
		wantErr error
	}{
		{name: "chosen", code: 0, uris: []string{"file://" + dir + "/my%20project"}, want: dir + "/my project"},
		{name: "cancelled", code: 1, wantErr: picker.ErrCancelled},
		{name: "ended", code: 2},
		{name: "not a file uri", code: 0, uris: []string{"https://example.test/x"}},
		{name: "two folders", code: 0, uris: []string{"file:///a", "file:///b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakePortal{code: tt.code, uris: tt.uris}
			startPortal(t, addr, f)
			client := desktoptest.Conn(t, addr)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got, err := picker.Portal{Conn: client}.Pick(ctx)
			switch {
			case tt.want != "":
				if err != nil || got != tt.want {
					t.Fatalf("Pick = %q, %v; want %q", got, err, tt.want)
				}
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Pick = %q, %v; want %v", got, err, tt.wantErr)
				}
			default:
				if err == nil || errors.Is(err, picker.ErrCancelled) || errors.Is(err, picker.ErrUnavailable) {
					t.Fatalf("Pick = %q, %v; want an error", got, err)
				}
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.opts) != 1 || f.opts[0]["directory"].Value() != true {
				t.Errorf("OpenFile options %v, want directory = true", f.opts)
			}
			f.conn.ReleaseName("org.freedesktop.portal.Desktop")
		})
	}
}

// TestPortalUnavailable: no portal on the bus is ErrUnavailable (the chain
// goes on to zenity and kdialog), and with none of them either the error
// names the command-line way.
func TestPortalUnavailable(t *testing.T) {
	addr := desktoptest.StartBus(t)
	client := desktoptest.Conn(t, addr)
	_, err := picker.Portal{Conn: client}.Pick(context.Background())
	if !errors.Is(err, picker.ErrUnavailable) {
		t.Fatalf("no portal: %v", err)
	}
	none := func(string) (string, error) { return "", exec.ErrNotFound }
	chain := picker.Chain{picker.Portal{Conn: client}, picker.Command{Name: "zenity", LookPath: none}}
	_, err = chain.Pick(context.Background())
	if !errors.Is(err, picker.ErrUnavailable) || hint.Of(err) == "" {
		t.Fatalf("chain: %v (hint %q)", err, hint.Of(err))
	}
}

// TestCommandFallback: a zenity-like program's answer, and its exit 1 as
// a cancel.
func TestCommandFallback(t *testing.T) {
	bin := t.TempDir()
	script := filepath.Join(bin, "zenity")
	write := func(body string) {
		if err := os.WriteFile(script, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	look := func(string) (string, error) { return script, nil }
	c := picker.Zenity()
	c.LookPath = look
	write("printf '%s\\n' /home/u/src/web\n")
	if got, err := c.Pick(context.Background()); err != nil || got != "/home/u/src/web" {
		t.Errorf("Pick = %q, %v", got, err)
	}
	write("exit 1\n")
	if _, err := c.Pick(context.Background()); !errors.Is(err, picker.ErrCancelled) {
		t.Errorf("cancel: %v", err)
	}
	write("printf '/a\\n/b\\n'\n")
	if got, err := c.Pick(context.Background()); err == nil {
		t.Errorf("two lines accepted: %q", got)
	}
}
