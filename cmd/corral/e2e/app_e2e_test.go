//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
)

// appStopsBox runs the real menu-bar app on a private D-Bus session, reads
// its menu over dbusmenu, checks the running box shows a non-zero host
// memory figure, and clicks the box's Stop item.
func appStopsBox(t *testing.T, x *h) {
	addr := desktoptest.StartBus(t)
	conn := desktoptest.Conn(t, addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(x.bin, "app")
	cmd.Env = append(append([]string{}, x.env...), "DBUS_SESSION_BUS_ADDRESS="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

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
	var boxNode *desktoptest.MenuNode
	var dump string
	if !desktoptest.WaitFor(30*time.Second, func() bool {
		_, root, err := item.Layout()
		if err != nil {
			return false
		}
		dump = root.Dump()
		boxNode = findPrefix(root, "● "+x.box)
		return boxNode != nil && (strings.Contains(boxNode.Label(), "MiB") || strings.Contains(boxNode.Label(), "GiB"))
	}) {
		t.Fatalf("no running box item with a memory figure:\n%s", dump)
	}
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
