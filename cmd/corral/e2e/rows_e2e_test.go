//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/desktoptest"
)

// Features proven on the boxes the suite already boots, each in one
// function called from the test whose box carries it (issue 25's table):
// which box, and why there, is said at each.

// The repository layer of TestBoxLifecycle's project: hide and box_dirs
// (a repository may add them), automatic snapshots kept to two.
// memory: 2 GiB, so that the guest can allocate and free 1 GiB (the
// balloon benchmark); qemu's host memory grows only with what the guest
// touches.
const lifecycleRepoConfig = `hide = ["secret", ".env"]
memory = "2GiB"
box_dirs = ["node_modules"]
snapshots = "auto"
snapshots_keep = 2
`

// Host-only contents of the hidden paths: never to be seen in the box.
const (
	hiddenKey = "HOST-HIDDEN-KEY"
	hiddenEnv = "TOKEN=HOST-HIDDEN-ENV"
)

// writeLifecycleProject gives TestBoxLifecycle's project its repository
// config and the files it hides, before the box is created.
func writeLifecycleProject(t *testing.T, x *h) {
	must(t, os.MkdirAll(filepath.Join(x.project, "secret"), 0o755))
	must(t, os.WriteFile(filepath.Join(x.project, "secret", "key"), []byte(hiddenKey+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(x.project, ".env"), []byte(hiddenEnv+"\n"), 0o600))
	must(t, os.WriteFile(filepath.Join(x.project, ".corral.toml"), []byte(lifecycleRepoConfig), 0o644))
}

// hiddenAndBoxDirs: the hidden directory and file show empty in the box,
// for the box user and for guest root after it unmounts the guest's own
// cover (full mode has sudo): on Linux qemu the host covers them for the
// VM. A box_dirs path keeps what the box writes on the box's disk: the
// host's directory stays empty. About 10 s on the running box.
func hiddenAndBoxDirs(t *testing.T, x *h) {
	user := x.ok("run", "--", "sh", "-c", `ls -A secret; cat secret/key .env 2>&1; echo end`)
	if strings.Contains(user, "HOST-HIDDEN") || !strings.HasSuffix(user, "end\n") {
		t.Errorf("the box user sees hidden content:\n%s", user)
	}
	root := x.ok("run", "--", "sudo", "sh", "-c", `umount secret 2>&1; umount .env 2>&1; mountpoint secret; ls -A secret; cat secret/key .env 2>&1; echo end`)
	if strings.Contains(root, "HOST-HIDDEN") || !strings.HasSuffix(root, "end\n") {
		t.Errorf("guest root sees hidden content after unmounting the guest's cover:\n%s", root)
	}
	t.Logf("guest root, after its umounts:\n%s", root)
	if b, err := os.ReadFile(filepath.Join(x.project, "secret", "key")); err != nil || string(b) != hiddenKey+"\n" {
		t.Errorf("the host's hidden file changed: %q, %v", b, err)
	}
	// The wrapper said what it covered (Lima keeps its stderr).
	ha, _ := os.ReadFile(filepath.Join(x.home, "lima", x.box, "ha.stderr.log"))
	for _, p := range []string{"secret", ".env"} {
		if !strings.Contains(string(ha), "hidden from qemu: "+filepath.Join(x.project, p)) {
			t.Errorf("ha.stderr.log does not say %s is hidden from qemu", p)
		}
	}

	x.ok("run", "--", "sh", "-c", "mkdir -p node_modules/pkg && echo in-the-box > node_modules/pkg/index.js && cat node_modules/pkg/index.js")
	if got := x.ok("run", "--", "cat", "node_modules/pkg/index.js"); got != "in-the-box\n" {
		t.Errorf("box_dirs: the box reads back %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Join(x.project, "node_modules")); len(ents) != 0 {
		t.Errorf("box_dirs: the host's node_modules holds %d entries, want none", len(ents))
	}
}

type snapshotEntry struct {
	Name string `json:"name"`
	Auto bool   `json:"auto"`
}

// autoSnapshots: snapshots = "auto" took a snapshot before each start of
// the stopped box (the suite's restarts), kept the newest two
// (snapshots_keep), pruned the rest with an audit line, and left the
// manual one alone. Reads only.
func autoSnapshots(t *testing.T, x *h) {
	var snaps []snapshotEntry
	jsonList(t, x.ok("snapshot", "ls", "--json"), "corral.snapshots/v1", "snapshots", &snaps)
	auto, manual := 0, false
	for _, s := range snaps {
		if s.Auto {
			auto++
		}
		manual = manual || s.Name == "before"
	}
	if auto != 2 || !manual {
		t.Errorf("snapshots %+v: want 2 automatic ones and the manual \"before\"", snaps)
	}
	audit, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
	if !strings.Contains(string(audit), `"auto":true`) || !strings.Contains(string(audit), `"removed":true`) {
		t.Error("the audit log has no pruned automatic snapshot")
	}
}

// driftThenRebuildOffline: a config change that needs a new box (network
// offline, a read-only project, and sudo to test as guest root) is named
// by the next session as drift; corral rebuild applies it (one more
// clone and boot). Then, from the rebuilt box: the project is read-only
// even for guest root; neither the slirp host addresses (which map to
// host loopback) nor DNS answer, as user or root; hidden paths stay
// hidden. About 4 minutes under TCG, most of it the boot.
func driftThenRebuildOffline(t *testing.T, x *h) {
	srv := startHostServer(t)
	trusted := filepath.Join(x.home, "projects", x.box+".toml")
	must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
	must(t, os.WriteFile(trusted, []byte("network = \"offline\"\nreadonly_project = true\nsudo = true\n"), 0o600))
	_, errOut, code := x.corral("run", "--", "true")
	if code != 0 || !strings.Contains(errOut, "changed since it was created") || !strings.Contains(errOut, "corral rebuild") {
		t.Errorf("a session after the change: exit %d, stderr %q; want the drift warning", code, errOut)
	}
	x.ok("rebuild")
	if m := x.meta(t); m.Network != "offline" {
		t.Fatalf("rebuilt box network %q, want offline", m.Network)
	}
	for _, argv := range [][]string{{"sh", "-c", "echo x > ro-probe"}, {"sudo", "sh", "-c", "echo x > ro-probe"}} {
		if _, _, code := x.corral(append([]string{"run", "--"}, argv...)...); code == 0 {
			t.Errorf("%v wrote into a read-only project", argv)
		}
	}
	if _, err := os.Stat(filepath.Join(x.project, "ro-probe")); err == nil {
		t.Error("a file written in the box reached the read-only project")
	}
	for _, target := range []string{"192.168.5.2:" + srv.port, "192.168.5.4:" + srv.port} {
		for _, sudo := range [][]string{nil, {"sudo"}} {
			argv := append(append([]string{"run", "--"}, sudo...), "curl", "-sS", "--noproxy", "*", "--max-time", "10", "http://"+target+"/offline")
			if o, _, code := x.corral(argv...); code == 0 {
				t.Errorf("%v reached %s: %q", sudo, target, o)
			}
		}
	}
	if n := srv.count("/offline"); n != 0 {
		t.Errorf("the host server got %d requests from an offline box", n)
	}
	for _, sudo := range [][]string{nil, {"sudo"}} {
		got := x.ok(append(append([]string{"run", "--"}, sudo...), "python3", "-c", udpProbe)...)
		if strings.Contains(got, "ANSWER") || strings.Count(got, "no-answer") != 2 {
			t.Errorf("DNS/UDP from an offline box (%v): %q", sudo, got)
		}
	}
	if got := x.ok("run", "--", "sh", "-c", "cat secret/key .env 2>&1; echo end"); strings.Contains(got, "HOST-HIDDEN") {
		t.Errorf("after the rebuild the box reads hidden content:\n%s", got)
	}
	if cl := x.qemuCmdline(x.box); !strings.Contains(cl, ",restrict=on") || strings.Contains(cl, "guestfwd=") {
		t.Errorf("the offline box's qemu: want restrict=on and no guestfwd:\n%s", cl)
	}
}

// brokerBoxPorts: the ports key forwards on a broker-mode box too (the
// global config's e2ePorts; the box's qemu is restrict=on, and Lima's
// forwarder still reaches the guest port). About 10 s.
func brokerBoxPorts(t *testing.T, x *h) {
	defer stopServers(x)
	serveInBox(t, x, e2eGuestPort)
	if got, err := hostGet(e2eHostPort, 60*time.Second); err != nil || got != fmt.Sprintf("port-%d", e2eGuestPort) {
		t.Errorf("configured port on a broker-mode box: host 127.0.0.1:%d answered %q, %v", e2eHostPort, got, err)
	}
}

// appAllowsRealDenials runs the real menu-bar app (private D-Bus, a fake
// notification daemon) while the broker-mode box is denied a host: the
// denial becomes a notification, whose "Allow once" lets the next
// connection through the real broker and only that one; the denial is then
// in the menu under the box, and its "Allow for 1 hour" opens the host
// again. The host is localhost at a port of its own (corral allow granted
// another port of it earlier). About 30 s.
func appAllowsRealDenials(t *testing.T, x *h, proxy string) {
	srv := startHostServer(t)
	hostport := "localhost:" + srv.port
	get := func(path string) string {
		return x.ok("run", "--", "curl", "-sS", "--max-time", "30", "--noproxy", "", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, "http://"+hostport+path)
	}

	item, notifyd := startApp(t, x, true)

	if got := get("/before"); got != "403" {
		t.Fatalf("before any allow: HTTP %q, want 403", got)
	}
	// Denials from earlier subtests may be posted first: wait for this one.
	var n desktoptest.Notification
	var err error
	for deadline := time.Now().Add(60 * time.Second); ; {
		n, err = notifyd.WaitPosted(time.Until(deadline))
		if err != nil {
			t.Fatalf("no notification for the denial of %s: %v", hostport, err)
		}
		if strings.Contains(n.Body, "(port "+srv.port+")") {
			break
		}
		t.Logf("another notification first: %s", n.Summary)
	}
	if !strings.Contains(n.Summary, "localhost") || !strings.Contains(n.Summary, x.box) || !strings.Contains(n.Summary, "(this machine)") {
		t.Errorf("notification %+v: want the host, marked as this machine, and the box", n)
	}
	if err := notifyd.Invoke(n.ID, "allow-once"); err != nil {
		t.Fatal(err)
	}
	got := ""
	for deadline := time.Now().Add(30 * time.Second); got != "200" && time.Now().Before(deadline); time.Sleep(time.Second) {
		got = get("/once")
	}
	if got != "200" || srv.count("/once") != 1 {
		t.Fatalf("after the notification's Allow once: HTTP %q, server hits %d; want 200 once", got, srv.count("/once"))
	}
	if got := get("/after-once"); got != "403" {
		t.Errorf("a second connection after Allow once: HTTP %q, want 403", got)
	}

	allow, _ := waitMenu(t, item, 60*time.Second, "a denied "+hostport+" with Allow for 1 hour under the box", func(root *desktoptest.MenuNode) *desktoptest.MenuNode {
		if b := findPrefix(root, "● "+x.box); b != nil {
			if d := findPrefix(b, hostport); d != nil {
				return d.Find("Allow for 1 hour")
			}
		}
		return nil
	})
	if err := item.Click(allow.ID); err != nil {
		t.Fatal(err)
	}
	got = ""
	for deadline := time.Now().Add(30 * time.Second); got != "200" && time.Now().Before(deadline); time.Sleep(time.Second) {
		got = get("/hour")
	}
	if got != "200" {
		t.Errorf("after the menu's Allow for 1 hour: HTTP %q, want 200", got)
	}
	if got := get("/hour-again"); got != "200" {
		t.Errorf("a second connection within the hour: HTTP %q, want 200", got)
	}
}

// stopOnExit: with stop_on_exit (followed by up, no rebuild) the box stops
// once its last session ends. The box is left stopped.
func stopOnExit(t *testing.T, x *h) {
	trusted := filepath.Join(x.home, "projects", x.box+".toml")
	b, err := os.ReadFile(trusted)
	must(t, err)
	must(t, os.WriteFile(trusted, append(b, []byte("\nstop_on_exit = true\n")...), 0o600))
	x.ok("up")
	x.ok("run", "--", "true")
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		state := ""
		for _, e := range x.ls() {
			if e.Name == x.box {
				state = e.State
			}
		}
		if state == "Stopped" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("box still %q 2 minutes after its last session ended with stop_on_exit", state)
		}
	}
}

// gcLeftovers: a Lima instance corral has no record of (a clone of the
// golden made behind corral's back) and a box whose instance was deleted
// behind its back while it ran (its metadata, and its broker still
// running) are what corral gc removes; the dry run lists them first. Runs
// last on its box, which it deletes.
func gcLeftovers(t *testing.T, x *h) {
	m := x.meta(t)
	if m.BrokerPID == 0 || syscall.Kill(m.BrokerPID, 0) != nil {
		t.Fatalf("box %s has no running broker to leave behind (pid %d)", x.box, m.BrokerPID)
	}
	limactl := func(args ...string) {
		cmd := exec.Command("limactl", args...)
		cmd.Env = append(append([]string{}, x.env...), "LIMA_HOME="+filepath.Join(x.home, "lima"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("limactl %v: %v\n%s", args, err, out)
		}
	}
	limactl("clone", "--tty=false", m.Golden, "orphan-e2e")
	limactl("delete", "--force", x.box)

	type item struct {
		Kind string `json:"kind"`
		Box  string `json:"box"`
		PID  int    `json:"pid"`
	}
	var plan struct{ Items []item }
	must(t, json.Unmarshal([]byte(x.ok("gc", "--dry-run", "--json")), &plan))
	want := map[item]bool{{Kind: "instance", Box: "orphan-e2e"}: false, {Kind: "metadata", Box: x.box}: false, {Kind: "broker", Box: x.box, PID: m.BrokerPID}: false}
	for _, it := range plan.Items {
		if _, ok := want[it]; ok {
			want[it] = true
		}
	}
	for it, seen := range want {
		if !seen {
			t.Errorf("gc --dry-run does not list %+v: %+v", it, plan.Items)
		}
	}
	x.ok("gc")
	if _, err := os.Stat(filepath.Join(x.home, "lima", "orphan-e2e")); !os.IsNotExist(err) {
		t.Errorf("the orphaned instance is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(x.home, "boxes", x.box+".json")); !os.IsNotExist(err) {
		t.Errorf("the gone box's metadata is still there: %v", err)
	}
	waitFor(t, "the gone box's broker to exit", 20*time.Second, func() bool { return syscall.Kill(m.BrokerPID, 0) != nil })
}

// claudeDetached: in a terminal (script(1) gives corral one), corral
// claude runs the real Claude Code in the box's detachable session
// "claude"; the terminal goes away, the session stays, and corral attach
// shows Claude Code's screen again. No key in this environment: the
// broker holds it from an earlier session. About 60 s under TCG (Node
// loading Claude Code).
func claudeDetached(t *testing.T, x *h) {
	line := fmt.Sprintf("exec %q -C %q claude", x.bin, x.project)
	cmd := exec.Command("script", "-qfec", line, "/dev/null")
	cmd.Env = append(append([]string{}, x.env...), "TERM=xterm-256color")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	stdin, err := cmd.StdinPipe()
	must(t, err)
	must(t, cmd.Start())
	killed := false
	kill := func() {
		if !killed {
			killed = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = stdin.Close()
			_ = cmd.Wait()
		}
	}
	defer kill()
	listed := func() bool {
		for _, s := range x.sessions(t) {
			if s.Box == x.box && s.Session == "claude" && s.Agent == "claude" {
				return true
			}
		}
		return false
	}
	waitFor(t, "corral claude to open the box's claude session", 3*time.Minute, listed)
	// The session's screen as tmux renders it (plain text, no escapes):
	// Claude Code draws something once Node has loaded it.
	screen := func() string {
		o, _, _ := x.corral("run", "--", "tmux", "-L", "corral", "capture-pane", "-p", "-t", "claude")
		return strings.TrimSpace(o)
	}
	shown := ""
	for deadline := time.Now().Add(3 * time.Minute); shown == "" && time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		shown = screen()
	}
	if shown == "" {
		t.Fatalf("the claude session's screen stayed empty; the terminal got:\n%q", tail([]byte(out.String()), 40))
	}
	t.Logf("the claude session's screen:\n%s", tail([]byte(shown), 40))
	kill()
	x.waitDetached(t, "claude")
	if !listed() {
		t.Fatalf("the claude session did not outlive its terminal: %+v", x.sessions(t))
	}
	c, out2, kill2 := x.attachClient(t, "claude")
	defer func() { kill2(); _ = c.Wait() }()
	// tmux redraws the whole screen for a new client, and the session
	// counts it.
	waitFor(t, "the re-attached client to get the screen", 60*time.Second, func() bool { return len(strings.TrimSpace(out2.String())) > 0 })
	waitFor(t, "the session to count the re-attached client", 30*time.Second, func() bool {
		for _, s := range x.sessions(t) {
			if s.Box == x.box && s.Session == "claude" {
				return s.Attached > 0
			}
		}
		return false
	})
	// End it (the launcher's tmux server is -L corral): later subtests
	// stop the box.
	x.corral("run", "--", "tmux", "-L", "corral", "kill-session", "-t", "claude")
}

// appStopsIdle runs the real menu-bar app while the box is running and
// idle past its idle_stop, waits for "Stop idle boxes (1)", clicks it and
// waits for the stop's audit line, reading nothing through corral
// meanwhile (a corral command would sweep first). The
// app's own timer sweeps a minute after it starts: the click comes first.
func appStopsIdle(t *testing.T, x *h) {
	item, _ := startApp(t, x, false)
	stopIdle, _ := waitMenu(t, item, 45*time.Second, "an enabled Stop idle boxes (1)", func(root *desktoptest.MenuNode) *desktoptest.MenuNode {
		if n := root.Find("Stop idle boxes (1)"); n != nil && n.Enabled() {
			return n
		}
		return nil
	})
	if err := item.Click(stopIdle.ID); err != nil {
		t.Fatal(err)
	}
	// The stop's last step is its audit line (the VM is gone before it).
	waitFor(t, "the box's idle-stop after Stop idle boxes", 2*time.Minute, func() bool { return x.audited("idle-stop") })
}

// cliSweepsIdle: every corral command stops idle boxes first; here ls
// stops a box idle past its idle_stop (followed by up, no rebuild). The
// box is left stopped.
func cliSweepsIdle(t *testing.T, x *h) {
	trusted := filepath.Join(x.home, "projects", x.box+".toml")
	must(t, os.MkdirAll(filepath.Dir(trusted), 0o700))
	b, _ := os.ReadFile(trusted)
	must(t, os.WriteFile(trusted, append(b, []byte("\nidle_stop = \"2s\"\n")...), 0o600))
	x.ok("up") // picks up the new idle_stop
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
		stopped := false
		for _, e := range x.ls() {
			stopped = stopped || (e.Name == x.box && e.State == "Stopped")
		}
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle box not stopped by the commands' sweep within 2m of idle_stop = 2s: %+v", x.ls())
		}
	}
	if !x.audited("idle-stop") {
		t.Errorf("no idle-stop of box %s in the audit log", x.box)
	}
}

// audited reports whether the audit log has a line of kind for x's box.
func (x *h) audited(kind string) bool {
	b, _ := os.ReadFile(filepath.Join(x.home, "logs", "audit.jsonl"))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"kind":"`+kind+`"`) && strings.Contains(l, `"box":"`+x.box+`"`) {
			return true
		}
	}
	return false
}

// noRepositoryInProject, on TestBoxLifecycle's box (a project with no git,
// the shape that had no protection at all): the agent's git init and git
// clone into the project fail with corral's line and work outside it;
// guest root's every spelling of .git, a symlink, a gitdir: file, a rename
// onto .git and a HEAD are refused by the host's name rule; host git run
// in every directory of the project runs nothing. About 10 s.
func noRepositoryInProject(t *testing.T, x *h) {
	marker := filepath.Join(t.TempDir(), "marker")
	hostile := "echo ran >> " + marker
	user := x.ok("run", "--", "sh", "-c", `git init -q . 2>&1; echo "init: $?"
git init -q --bare /tmp/src.git && git clone -q /tmp/src.git cloned 2>&1; echo "clone: $?"
git init -q /tmp/outside && echo "outside ok"`)
	for _, want := range []string{"init: 1", "clone: 1", "outside ok", "corral: this box cannot make a git repository inside the project"} {
		if !strings.Contains(user, want) {
			t.Errorf("box user: no %q:\n%s", want, user)
		}
	}
	root := x.ok("run", "--", "sudo", "sh", "-c", `mkdir -p deep/er
for n in .git .GIT git~1 .git. deep/er/.git; do mkdir "$n" 2>/dev/null && echo "MADE $n"; done
ln -s /tmp .git 2>/dev/null && echo "MADE a .git symlink"
(printf 'gitdir: /tmp
' > .git) 2>/dev/null && echo "MADE a gitdir file"
mkdir x && mv x .git 2>/dev/null && echo "MOVED x to .git"
mv deep deep2 && mkdir -p deep/er && (mkdir deep/er/.git 2>/dev/null && echo "MADE after the rename")
(echo "ref: refs/heads/main" > HEAD) 2>/dev/null && echo "MADE HEAD"
mkdir -p bare/objects bare/refs && (printf '[core]
	fsmonitor = %s
' "$1" > bare/config) && echo "wrote bare/config"
(echo "ref: refs/heads/main" > bare/HEAD) 2>/dev/null && echo "MADE bare/HEAD"
true`, "sh", hostile)
	if strings.Contains(root, "MADE") || strings.Contains(root, "MOVED") || !strings.Contains(root, "wrote bare/config") {
		t.Errorf("guest root:\n%s", root)
	}
	noGitNamesMadeByTheBox(t, x.project)
	filepath.WalkDir(x.project, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			hostGit(t, p, "status")
		}
		return nil
	})
	if _, err := os.Stat(marker); err == nil {
		t.Error("host git ran a command the box planted")
	}
	x.ok("run", "--", "rm", "-rf", "deep", "deep2", "x", "bare", "cloned")
}
