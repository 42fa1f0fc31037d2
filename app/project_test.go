package app_test

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/recent"
)

// TestOpenProjectRealPath is the real path of "any project from the menu"
// on Linux, end to end: the app runs over the core backend (a state
// directory and a fake limactl), its Projects menu comes from corral's
// recent list and the project_roots of config.toml, clicks arrive over
// D-Bus as a tray host sends them, and the command goes through
// CommandArgv and the Linux terminal launcher to a fake
// x-terminal-emulator on PATH that records its argv. "Open folder…" asks
// a fake desktop portal on the same private session bus.
func TestOpenProjectRealPath(t *testing.T) {
	h := newHarness(t)
	conn := desktoptest.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	portal, err := desktoptest.StartFakePortal(conn)
	if err != nil {
		t.Fatal(err)
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "home")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	src := realDir(t, t.TempDir())
	for _, d := range []string{"api/.git", "cli/.git", "plain", "picked dir"} {
		if err := os.MkdirAll(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idea := filepath.Join(realDir(t, t.TempDir()), "idea")
	if err := os.Mkdir(idea, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := recent.Record(l, idea, time.Now()); err != nil {
		t.Fatal(err)
	}
	// A recent folder since removed is not offered.
	if err := recent.Record(l, filepath.Join(src, "gone"), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.GlobalConfig(), []byte("project_roots = ["+quote(src)+"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	picked := filepath.Join(src, "picked dir")
	portal.Answer(0, (&url.URL{Scheme: "file", Path: picked}).String())

	t.Setenv("CORRAL_APPTEST_HOME", l.Home)
	h.start(200 * time.Millisecond)
	item := openItem(t, conn, w)
	var root *desktoptest.MenuNode
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		_, r, err := item.Layout()
		if err == nil && r.Find("api (new box)") != nil {
			root = r
		}
		return root != nil
	}) {
		_, r, _ := item.Layout()
		t.Fatalf("no repository from project_roots in the menu:\n%s", r.Dump())
	}
	if root.Find("gone (new box)") != nil {
		t.Errorf("a removed recent folder is listed:\n%s", root.Dump())
	}
	if root.Find("plain (new box)") != nil {
		t.Errorf("a folder without .git is listed:\n%s", root.Dump())
	}
	// The menu over D-Bus is the model's menu of the same state.
	want := menu.Build(app.State{
		Projects: []menu.Project{{Dir: idea, LastUsed: time.Now()}},
		Repos:    []menu.Project{{Dir: filepath.Join(src, "api")}, {Dir: filepath.Join(src, "cli")}},
		Roots:    []string{src},
	}, menu.UI{}, menu.Limits{})
	projects, _ := want.Find("projects")
	if got := root.Find("Projects"); got == nil || len(got.Children) < len(projects.Children) {
		t.Fatalf("Projects submenu:\n%s", root.Dump())
	}

	corral := "/opt/corral/bin/corral"
	click(t, item, root.Find("api (new box)"), "api")
	h.waitArgv("terminal.argv", []string{"-e", corral, "claude", "-C", filepath.Join(src, "api")})
	click(t, item, root.Find("idea (new box)"), "idea")
	h.waitArgv("terminal.argv", []string{"-e", corral, "claude", "-C", idea})
	click(t, item, root.Find("Open folder…"), "Open folder…")
	h.waitArgv("terminal.argv", []string{"-e", corral, "claude", "-C", picked})
	if opts := portal.Options(); len(opts) != 1 || opts[0]["directory"].Value() != true {
		t.Errorf("portal OpenFile options %v, want one call with directory = true", opts)
	}

	// A folder swapped for a symlink after the scan is refused at the click.
	if err := os.Rename(filepath.Join(src, "cli"), filepath.Join(src, "cli-moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(idea, filepath.Join(src, "cli")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(h.dir, "terminal.argv"))
	click(t, item, root.Find("cli (new box)"), "cli")
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		_, r, err := item.Layout()
		if err != nil {
			return false
		}
		for _, n := range r.Children {
			if strings.HasPrefix(n.Label(), "⚠ open terminal for claude -C /") {
				return true
			}
		}
		return false
	}) {
		_, r, _ := item.Layout()
		t.Errorf("no error line for the swapped folder:\n%s", r.Dump())
	}
	if _, err := os.Stat(filepath.Join(h.dir, "terminal.argv")); err == nil {
		t.Error("a terminal was opened on the swapped folder")
	}
}

func quote(s string) string { return `"` + s + `"` }

// TestOpenFolderWithoutChooser: no desktop portal, no zenity or kdialog:
// "Open folder…" posts a notification that says how to open a project by
// hand, and nothing is launched.
func TestOpenFolderWithoutChooser(t *testing.T) {
	for _, p := range []string{"zenity", "kdialog"} {
		if _, err := exec.LookPath(p); err == nil {
			t.Skipf("%s is installed: the fallback would show a real dialog", p)
		}
	}
	h := newHarness(t)
	conn := desktoptest.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	notifyd, err := desktoptest.StartFakeNotifyd(conn)
	if err != nil {
		t.Fatal(err)
	}
	h.start(200 * time.Millisecond)
	item := openItem(t, conn, w)
	root := waitMenu(t, item, menu.Build(app.State{}, menu.UI{}, menu.Limits{}).Text())
	click(t, item, root.Find("Open folder…"), "Open folder…")
	n, err := notifyd.WaitPosted(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Body, "corral claude -C DIR") || len(n.Actions) != 0 {
		t.Errorf("notification %q / %q, actions %q", n.Summary, n.Body, n.Actions)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "terminal.argv")); err == nil {
		t.Error("a terminal was opened")
	}
}
