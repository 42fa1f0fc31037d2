//go:build e2e

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
)

// startApp runs the real menu-bar app on a private D-Bus session (with a
// fake notification daemon when notifyd is set; env is added to the app's
// environment, later entries winning) and returns its tray item once it
// opens; the app is killed when t ends.
func startApp(t *testing.T, x *h, notifyd bool, env ...string) (*desktoptest.Item, *desktoptest.FakeNotifyd) {
	t.Helper()
	addr := desktoptest.StartBus(t)
	conn := desktoptest.Conn(t, addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	var nd *desktoptest.FakeNotifyd
	if notifyd {
		if nd, err = desktoptest.StartFakeNotifyd(conn); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(x.bin, "app")
	cmd.Env = append(append(append([]string{}, x.env...), "DBUS_SESSION_BUS_ADDRESS="+addr), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	var id string
	select {
	case id = <-w.Registered:
	case <-time.After(30 * time.Second):
		t.Fatal("the app never registered its tray item")
	}
	var item *desktoptest.Item
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		item, err = desktoptest.OpenItem(w.Conn(), id[:strings.Index(id, "/")], "/StatusNotifierItem")
		return err == nil
	}) {
		t.Fatalf("opening the tray item: %v", err)
	}
	return item, nd
}

// appStopsBox runs the real menu-bar app on a private D-Bus session, reads
// its menu over dbusmenu, checks the running box shows a non-zero host
// memory figure, and clicks the box's Stop item.
func appStopsBox(t *testing.T, x *h) {
	item, _ := startApp(t, x, false)
	boxNode, dump := waitMenu(t, item, 30*time.Second, "a running box item with a memory figure", func(root *desktoptest.MenuNode) *desktoptest.MenuNode {
		if b := findPrefix(root, "● "+x.box); b != nil && (strings.Contains(b.Label(), "MiB") || strings.Contains(b.Label(), "GiB")) {
			return b
		}
		return nil
	})
	t.Logf("menu item: %s", boxNode.Label())
	stop := boxNode.Find("Stop")
	if stop == nil {
		t.Fatalf("no Stop item under %q:\n%s", boxNode.Label(), dump)
	}
	if err := item.Click(stop.ID); err != nil {
		t.Fatal(err)
	}
	if !desktoptest.WaitFor(2*time.Minute, func() bool {
		for _, e := range x.ls() {
			if e.Name == x.box {
				return e.State == "Stopped"
			}
		}
		return false
	}) {
		t.Fatalf("the app's Stop did not stop the box")
	}
}

// waitMenu reads the app's menu until find returns an item, and returns it
// with the menu's dump; at the deadline it fails t naming what, with the
// last dump.
func waitMenu(t *testing.T, item *desktoptest.Item, within time.Duration, what string, find func(root *desktoptest.MenuNode) *desktoptest.MenuNode) (*desktoptest.MenuNode, string) {
	t.Helper()
	var found *desktoptest.MenuNode
	var dump string
	if !desktoptest.WaitFor(within, func() bool {
		_, root, err := item.Layout()
		if err != nil {
			return false
		}
		dump = root.Dump()
		found = find(root)
		return found != nil
	}) {
		t.Fatalf("no %s in the menu:\n%s", what, dump)
	}
	return found, dump
}

func findPrefix(n *desktoptest.MenuNode, prefix string) *desktoptest.MenuNode {
	if strings.HasPrefix(n.Label(), prefix) {
		return n
	}
	for _, c := range n.Children {
		if f := findPrefix(c, prefix); f != nil {
			return f
		}
	}
	return nil
}

// appAttachesSession runs the real menu-bar app while the box has the
// detachable session name, waits until the app (asking the box over its
// ssh master, off its event loop) lists it under the box, clicks its
// "Attach" item, and checks the terminal launcher got `corral attach BOX
// SESSION`: a fake x-terminal-emulator first on PATH records its argv.
// About 10 s on the shared running box (the app's first ask, then one
// refresh).
func appAttachesSession(t *testing.T, x *h, name string) {
	dir := t.TempDir()
	argvFile := filepath.Join(dir, "terminal.argv")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > " + argvFile + ".tmp\nmv " + argvFile + ".tmp " + argvFile + "\n"
	if err := os.WriteFile(filepath.Join(dir, "x-terminal-emulator"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Later entries win in exec's environment: the fake terminal first on
	// PATH, no $TERMINAL.
	item, _ := startApp(t, x, false, "PATH="+dir+":"+os.Getenv("PATH"), "TERMINAL=")
	attach, _ := waitMenu(t, item, 60*time.Second, "an Attach "+name+" item under the box", func(root *desktoptest.MenuNode) *desktoptest.MenuNode {
		if b := findPrefix(root, "● "+x.box); b != nil {
			return findPrefix(b, "Attach "+name)
		}
		return nil
	})
	t.Logf("menu item: %s", attach.Label())
	if err := item.Click(attach.ID); err != nil {
		t.Fatal(err)
	}
	// The app runs its own executable (os.Executable: symlinks resolved).
	exe, err := filepath.EvalSymlinks(x.bin)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-e", exe, "attach", x.box, name}
	var got []string
	if !desktoptest.WaitFor(20*time.Second, func() bool {
		b, err := os.ReadFile(argvFile)
		if err != nil {
			return false
		}
		got = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		return slices.Equal(got, want)
	}) {
		t.Fatalf("terminal argv %q, want %q", got, want)
	}
}
