package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/desktoptest"
	coredt "github.com/corral-dev/corral/core/desktoptest"
)

func (h *harness) writeJSON(name string, v any) {
	h.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		h.t.Fatal(err)
	}
	tmp := filepath.Join(h.dir, name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, name)); err != nil {
		h.t.Fatal(err)
	}
}

// TestRemoteHostsInMenu: the app over D-Bus with three remote hosts: one
// answers (its boxes under "on gpu"), one cannot be reached (one line
// saying why), one never answers. The slow one holds nothing up: the
// others are shown, clicks on local boxes are handled and local changes
// redrawn while its read hangs, and its boxes appear when it answers.
// Actions on a remote box go to the remote backend with its host, and its
// session opens as corral --host HOST claude -C DIR.
func TestRemoteHostsInMenu(t *testing.T) {
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute).Truncate(time.Second)
	gpuWeb := menu.BoxView{Name: "web-3f2a1c", Project: "/home/me/src/web", State: boxstate.Running, MemBytes: 2 << 30, MemCapBytes: 8 << 30,
		Denied: []menu.DeniedHost{{Host: "api.example.test", Port: 443, Count: 2, Last: at}}}
	gpu := menu.RemoteHost{Name: "gpu", URL: "ssh://me@gpu.test", At: at, Boxes: []menu.BoxView{gpuWeb}}
	down := menu.RemoteHost{Name: "down", URL: "ssh://down.test", At: at, Err: "cannot reach the host over ssh: connection refused"}
	slow := menu.RemoteHost{Name: "slow", URL: "ssh://slow.test", At: at,
		Boxes: []menu.BoxView{{Name: "big-1", Project: "/srv/big", State: boxstate.Stopped}}}
	h.writeJSON("hosts.json", []menu.RemoteHost{{Name: "down", URL: down.URL}, {Name: "gpu", URL: gpu.URL}, {Name: "slow", URL: slow.URL}})
	h.writeJSON("remote-gpu.json", gpu)
	h.writeJSON("remote-down.json", down)
	h.writeJSON("remote-slow.json", slow)
	if err := os.WriteFile(filepath.Join(h.dir, "remote-slow.slow"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	local := api // a stopped local box of the same shape as elsewhere
	h.writeState(app.State{Boxes: []menu.BoxView{local}})
	h.start(100 * time.Millisecond)
	item := openItem(t, conn, w)

	reading := menu.RemoteHost{Name: "slow", URL: slow.URL, Reading: true}
	want := func(boxes []menu.BoxView, slowHost menu.RemoteHost) string {
		return menu.Build(app.State{Boxes: boxes, Remote: []menu.RemoteHost{down, gpu, slowHost}}, menu.UI{Now: time.Now()}, menu.Limits{}).Text()
	}
	root := waitMenu(t, item, want([]menu.BoxView{local}, reading))
	if root.Find("on down — unreachable: cannot reach the host over ssh: connection refused") == nil || root.Find("on slow — reading…") == nil {
		t.Fatalf("host lines missing:\n%s", root.Dump())
	}

	// The slow host's read hangs; the loop does not.
	click(t, item, root.Find(menu.BoxTitle(local, 28)).Find("Start"), "local Start")
	h.waitCall(call{Op: "start", Box: local.Name})
	running := local
	running.State = boxstate.Running
	h.writeState(app.State{Boxes: []menu.BoxView{running}})
	root = waitMenu(t, item, want([]menu.BoxView{running}, reading))

	// Remote actions carry their host.
	webNode := root.Find(menu.BoxTitle(gpuWeb, 28))
	if webNode == nil {
		t.Fatalf("no remote box:\n%s", root.Dump())
	}
	click(t, item, webNode.Find("Stop"), "remote Stop")
	h.waitCall(call{Op: "remote-stop", Box: "web-3f2a1c", Remote: "gpu"})
	denied := webNode.Find("Denied hosts (1)")
	if denied == nil || len(denied.Children) == 0 {
		t.Fatalf("no remote denials:\n%s", root.Dump())
	}
	click(t, item, denied.Children[0].Find("Allow for this session"), "remote Allow")
	h.waitCall(call{Op: "remote-allow", Box: "web-3f2a1c", Host: "api.example.test", Scope: "session", Remote: "gpu"})
	click(t, item, webNode.Find("Open Claude session"), "remote session")
	h.waitArgv("terminal.argv", []string{"-e", "/opt/corral/bin/corral", "--host", "gpu", "claude", "-C", "/home/me/src/web"})
	for _, c := range h.calls() {
		if c.Remote == "" && c.Box == "web-3f2a1c" {
			t.Errorf("a local call for a remote box: %+v", c)
		}
	}

	// The slow host answers: its boxes appear.
	if err := os.Remove(filepath.Join(h.dir, "remote-slow.slow")); err != nil {
		t.Fatal(err)
	}
	waitMenu(t, item, want([]menu.BoxView{running}, slow))
}
