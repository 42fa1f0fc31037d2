package app_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/desktoptest"
	coredt "github.com/corral-dev/corral/core/desktoptest"
)

// TestMenuScreenshot shows the real menu in a real StatusNotifierItem host
// (gtk-sni-tray-standalone, a GTK bar that is also the watcher) under Xvfb,
// opens it and two submenus with xdotool, and saves a screenshot to the
// path in CORRAL_APP_SCREENSHOT (docs/menu.png). It only runs when that
// variable is set. Packages: dbus xvfb xdotool imagemagick
// haskell-gtk-sni-tray-utils.
//
//	CORRAL_APP_SCREENSHOT=$PWD/docs/menu.png go test -run TestMenuScreenshot ./app
func TestMenuScreenshot(t *testing.T) {
	out := os.Getenv("CORRAL_APP_SCREENSHOT")
	if out == "" {
		t.Skip("set CORRAL_APP_SCREENSHOT=/path/menu.png to take the screenshot")
	}
	host := coredt.LookPath(t, "gtk-sni-tray-standalone", "haskell-gtk-sni-tray-utils")
	coredt.LookPath(t, "xdotool", "xdotool")
	coredt.LookPath(t, "import", "imagemagick")
	const w, hgt = 960, 520
	h := newHarness(t)
	desktoptest.StartXvfb(t, strconv.Itoa(w)+"x"+strconv.Itoa(hgt)+"x24")
	t.Setenv("NO_AT_BRIDGE", "1")
	bar := exec.Command(host, "--top", "--end", "--watcher", "-s", "32", "-c", "#d8d8d8")
	if err := bar.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bar.Process.Kill(); _ = bar.Wait() })
	conn := coredt.Conn(t, h.addr)
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		var has bool
		_ = conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.kde.StatusNotifierWatcher").Store(&has)
		return has
	}) {
		t.Fatal("tray host never became the watcher")
	}
	now := time.Now()
	web := menu.BoxView{Name: "web-3f2a1c", Project: "/home/u/src/web", State: boxstate.Running,
		MemBytes: 1288490189, MemCapBytes: 4 << 30, Sessions: 1,
		Detached: []menu.SessionView{
			{Name: "claude", Agent: "claude", Attached: 1, Activity: now.Add(-5 * time.Second)},
			{Name: "tests", Agent: "shell", Activity: now.Add(-14 * time.Minute)},
		},
		Denied: []menu.DeniedHost{
			{Host: "registry.npmjs.example.test", Port: 443, Count: 14, Last: now.Add(-2 * time.Minute)},
			{Host: "telemetry.example.test", Port: 443, Count: 3, Last: now.Add(-40 * time.Minute)},
		}}
	h.writeState(app.State{
		Boxes: []menu.BoxView{web,
			{Name: "api-77aa01", State: boxstate.Running, MemBytes: 3 << 29, MemCapBytes: 8 << 30, Sessions: 2},
			{Name: "docs-site-with-a-rather-long-name-9c1d", State: boxstate.Stopped, MemCapBytes: 2 << 30}},
		Projects: []menu.Project{{Dir: "/home/u/src/web", Box: "web-3f2a1c", LastUsed: now}, {Dir: "/home/u/src/new-idea", LastUsed: now.Add(-time.Hour)}},
		Repos:    []menu.Project{{Dir: "/home/u/src/cli"}, {Dir: "/home/u/src/docs-site"}},
		Roots:    []string{"~/src"},
	})
	h.start(time.Second)
	time.Sleep(2 * time.Second) // icon fetched and drawn
	xdo := func(args ...string) {
		if b, err := exec.Command("xdotool", args...).CombinedOutput(); err != nil {
			t.Fatalf("xdotool %v: %v %s", args, err, b)
		}
	}
	xdo("mousemove", strconv.Itoa(w-16), "16", "click", "1")
	time.Sleep(time.Second)
	// Hover the web box, then its first session's Attach. The coordinates
	// fit this screen, bar and menu; CORRAL_APP_SCREENSHOT_HOVER ("x,y x,y
	// ...") overrides them after a menu change, CORRAL_APP_SCREENSHOT_CROP
	// (an ImageMagick geometry) the part kept.
	hover := os.Getenv("CORRAL_APP_SCREENSHOT_HOVER")
	if hover == "" {
		hover = "700,123 450,123 400,173"
	}
	for _, xy := range coords(hover) {
		xdo("mousemove", strconv.Itoa(xy[0]), strconv.Itoa(xy[1]))
		time.Sleep(1200 * time.Millisecond)
	}
	full := out + ".full.png"
	if err := desktoptest.ScreenshotTo(full); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(full)
	// Keep the bar and the menus, not the empty screen below them.
	crop := os.Getenv("CORRAL_APP_SCREENSHOT_CROP")
	if crop == "" {
		crop = "700x345+260+0"
	}
	if b, err := exec.Command("convert", full, "-crop", crop, "+repage", out).CombinedOutput(); err != nil {
		t.Fatalf("cropping: %v %s", err, b)
	}
	t.Logf("screenshot %s", out)
}

// coords parses "x,y x,y ...".
func coords(s string) [][2]int {
	var out [][2]int
	for _, f := range strings.Fields(s) {
		var x, y int
		if _, err := fmt.Sscanf(f, "%d,%d", &x, &y); err == nil {
			out = append(out, [2]int{x, y})
		}
	}
	return out
}
