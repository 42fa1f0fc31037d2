package notify

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
	coredt "github.com/corral-dev/corral/core/desktoptest"
)

func waitAction(t *testing.T, n Notifier) ActionEvent {
	t.Helper()
	select {
	case a := <-n.Actions():
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no action event")
	}
	return ActionEvent{}
}

func TestFreedesktopWithFakeDaemon(t *testing.T) {
	addr := coredt.StartBus(t)
	fake, err := desktoptest.StartFakeNotifyd(coredt.Conn(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewFreedesktop(coredt.Conn(t, addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	for _, tc := range []struct{ host, key string }{{"a.example.test", ActionAllow}, {"b.example.test", ActionAllowOnce}} {
		if err := n.Notify(ctx, Notification{Box: "web", Host: tc.host, Title: "blocked " + tc.host, Body: "body"}); err != nil {
			t.Fatal(err)
		}
		got, err := fake.WaitPosted(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got.Summary != "blocked "+tc.host || got.AppName != "corral" || len(got.Actions) != 4 ||
			got.Actions[0] != "allow" || got.Actions[1] != "Allow" || got.Actions[2] != "allow-once" || got.Actions[3] != "Allow once" {
			t.Errorf("posted %+v", got)
		}
		if err := fake.Invoke(got.ID, tc.key); err != nil {
			t.Fatal(err)
		}
		if a := waitAction(t, n); a != (ActionEvent{Box: "web", Host: tc.host, Action: tc.key}) {
			t.Errorf("action = %+v", a)
		}
	}
	// Closing without an action reports nothing.
	if err := n.Notify(ctx, Notification{Box: "web", Host: "c.example.test", Title: "t"}); err != nil {
		t.Fatal(err)
	}
	got, _ := fake.WaitPosted(5 * time.Second)
	_ = fake.CloseNotification(got.ID)
	select {
	case a := <-n.Actions():
		t.Errorf("unexpected action %+v after close", a)
	case <-time.After(200 * time.Millisecond):
	}
}

// A real notification daemon: dunst under Xvfb. dunst's
// NotificationAction(0) (what "dunstctl action 0" sends) opens its action
// menu through the configured dmenu when a notification has two actions;
// here "dmenu" is a script that picks the plain "Allow".
func TestFreedesktopWithDunst(t *testing.T) {
	dunstBin := coredt.LookPath(t, "dunst", "dunst")
	addr := coredt.StartBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr)
	desktoptest.StartXvfb(t, "640x200x24")
	dir := t.TempDir()
	pick := filepath.Join(dir, "pick-allow.sh")
	if err := os.WriteFile(pick, []byte("#!/bin/sh\ngrep -v -i once | grep -m1 Allow\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "dunstrc")
	if err := os.WriteFile(cfg, []byte("[global]\n    dmenu = "+pick+"\n    font = Sans 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	d := exec.Command(dunstBin, "-config", cfg)
	d.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+dir)
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Process.Kill(); _ = d.Wait() })
	conn := coredt.Conn(t, addr)
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		var has bool
		_ = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.Notifications").Store(&has)
		return has
	}) {
		t.Fatal("dunst did not claim org.freedesktop.Notifications")
	}
	n, err := NewFreedesktop(coredt.Conn(t, addr), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := n.Notify(context.Background(), Notification{Box: "web", Host: "api.example.test", Title: "web was blocked from api.example.test", Body: "Allow it?"}); err != nil {
		t.Fatal(err)
	}
	dunst := conn.Object("org.freedesktop.Notifications", "/org/freedesktop/Notifications")
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		v, err := dunst.GetProperty("org.dunstproject.cmd0.displayedLength")
		return err == nil && v.Value().(uint32) == 1
	}) {
		t.Fatal("dunst never displayed the notification")
	}
	if err := dunst.Call("org.dunstproject.cmd0.NotificationAction", 0, uint32(0)).Err; err != nil {
		t.Fatal(err)
	}
	if a := waitAction(t, n); a != (ActionEvent{Box: "web", Host: "api.example.test", Action: ActionAllow}) {
		t.Errorf("action = %+v", a)
	}
}
