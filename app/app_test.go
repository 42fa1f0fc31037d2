package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/app"
	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/broker"
	"github.com/corral-dev/corral/core/desktoptest"
	coredt "github.com/corral-dev/corral/core/desktoptest"
	"github.com/corral-dev/corral/core/gitshadow"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

// The tests re-execute the test binary as the app (app.Run with a fake
// Backend) on a private session bus, then drive it over D-Bus like a tray
// host would.
const childEnv = "CORRAL_APPTEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "app error:", err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ---- the child: app.Run over a file-backed fake Backend ----

// fileBackend is the fake Backend in the child. The test controls it
// through files in dir: state.json is returned by Snapshot (re-read each
// time), snapshot-error makes Snapshot fail, every call is appended to
// calls.jsonl, and on SIGUSR1 new lines of denials.jsonl are reported
// through WatchDenials.
type fileBackend struct {
	dir string
	mu  sync.Mutex
}

type call struct {
	Op     string `json:"op"`
	Box    string `json:"box,omitempty"`
	Host   string `json:"host,omitempty"`
	Scope  string `json:"scope,omitempty"`
	Remote string `json:"remote,omitempty"`
}

type denial struct {
	Box string          `json:"box"`
	D   menu.DeniedHost `json:"d"`
}

var (
	_ app.Backend       = (*fileBackend)(nil)
	_ app.RemoteBackend = (*fileBackend)(nil)
)

func (f *fileBackend) record(c call) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(c)
	fh, err := os.OpenFile(filepath.Join(f.dir, "calls.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer fh.Close()
	_, err = fh.Write(append(b, '\n'))
	return err
}

func (f *fileBackend) Snapshot(ctx context.Context) (app.State, error) {
	var st app.State
	if b, err := os.ReadFile(filepath.Join(f.dir, "snapshot-error")); err == nil {
		return st, errors.New(strings.TrimSpace(string(b)))
	}
	b, err := os.ReadFile(filepath.Join(f.dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, err
	}
	// Like the real service, the snapshot includes the denials logged so far.
	dl, _ := os.ReadFile(filepath.Join(f.dir, "denials.jsonl"))
	for _, line := range strings.Split(strings.TrimSpace(string(dl)), "\n") {
		var d denial
		if json.Unmarshal([]byte(line), &d) != nil {
			continue
		}
		for i := range st.Boxes {
			if st.Boxes[i].Name == d.Box {
				st.Boxes[i].Denied = append(st.Boxes[i].Denied, d.D)
			}
		}
	}
	return st, nil
}

func (f *fileBackend) Start(ctx context.Context, box string) error {
	return f.record(call{Op: "start", Box: box})
}
func (f *fileBackend) Stop(ctx context.Context, box string) error {
	return f.record(call{Op: "stop", Box: box})
}
func (f *fileBackend) StopIdle(ctx context.Context) ([]string, error) {
	return nil, f.record(call{Op: "stop-idle"})
}
func (f *fileBackend) GuardGit(ctx context.Context) []app.GitRevert { return nil }
func (f *fileBackend) Allow(ctx context.Context, box, host string, scope app.AllowScope) error {
	return f.record(call{Op: "allow", Box: box, Host: host, Scope: scope.String()})
}
func (f *fileBackend) Deny(ctx context.Context, box, request string) error {
	return f.record(call{Op: "deny", Box: box, Host: request})
}
func (f *fileBackend) Rebuild(ctx context.Context, box string) error {
	return f.record(call{Op: "rebuild", Box: box})
}
func (f *fileBackend) Pull(ctx context.Context, box string) error {
	return f.record(call{Op: "pull", Box: box})
}
func (f *fileBackend) EgressLogPath(box string) string {
	return "/var/log/corral/" + box + ".egress.log"
}
func (f *fileBackend) ConfigPath() string { return "/etc/corral/config.toml" }

func (f *fileBackend) WatchDenials(ctx context.Context, fn func(string, app.DeniedHost)) error {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	defer signal.Stop(sig)
	var off int64
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sig:
		}
		b, err := os.ReadFile(filepath.Join(f.dir, "denials.jsonl"))
		if err != nil || int64(len(b)) <= off {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b[off:])), "\n") {
			var d denial
			if json.Unmarshal([]byte(line), &d) == nil {
				fn(d.Box, d.D)
			}
		}
		off = int64(len(b))
	}
}

// RemoteHosts returns hosts.json (none when it is missing).
func (f *fileBackend) RemoteHosts(ctx context.Context) ([]menu.RemoteHost, error) {
	b, err := os.ReadFile(filepath.Join(f.dir, "hosts.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var hs []menu.RemoteHost
	return hs, json.Unmarshal(b, &hs)
}

// ReadHost returns remote-HOST.json; while remote-HOST.slow exists it does
// not answer at all (a host whose ssh hangs).
func (f *fileBackend) ReadHost(ctx context.Context, host string) menu.RemoteHost {
	for {
		if _, err := os.Stat(filepath.Join(f.dir, "remote-"+host+".slow")); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			return menu.RemoteHost{Name: host, Err: ctx.Err().Error()}
		case <-time.After(20 * time.Millisecond):
		}
	}
	var h menu.RemoteHost
	b, err := os.ReadFile(filepath.Join(f.dir, "remote-"+host+".json"))
	if err == nil {
		err = json.Unmarshal(b, &h)
	}
	if err != nil {
		return menu.RemoteHost{Name: host, Err: err.Error()}
	}
	return h
}

func (f *fileBackend) RemoteStart(ctx context.Context, host, box string) error {
	return f.record(call{Op: "remote-start", Box: box, Remote: host})
}
func (f *fileBackend) RemoteStop(ctx context.Context, host, box string) error {
	return f.record(call{Op: "remote-stop", Box: box, Remote: host})
}
func (f *fileBackend) RemoteAllow(ctx context.Context, host, box, entry string, scope app.AllowScope) error {
	return f.record(call{Op: "remote-allow", Box: box, Host: entry, Scope: scope.String(), Remote: host})
}

func runChild() error {
	dir := os.Getenv("CORRAL_APPTEST_DIR")
	interval, _ := time.ParseDuration(os.Getenv("CORRAL_APPTEST_REFRESH"))
	sweep, _ := time.ParseDuration(os.Getenv("CORRAL_APPTEST_SWEEP")) // "": the default
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fb := &fileBackend{dir: dir}
	var backend app.Backend = fb
	var remote app.RemoteBackend = fb
	if home := os.Getenv("CORRAL_APPTEST_HOME"); home != "" {
		// The real backend over a state dir, with a fake limactl.
		svc, _ := boxtest.Service(paths.Layout{Home: home}, time.Now(), audit.ActorApp)
		svc.Now = time.Now
		backend, remote = app.NewCoreBackend(svc), nil
	}
	return app.Run(ctx, app.Options{
		Backend:         backend,
		Logger:          slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
		CorralPath:      "/opt/corral/bin/corral",
		StateDir:        filepath.Join(dir, "state"),
		RefreshInterval: interval,
		RemoteInterval:  interval,
		SweepInterval:   sweep,
		Remote:          remote,
	})
}

// ---- the test side ----

type child struct {
	cmd    *exec.Cmd
	exited chan error    // receives the exit status once
	done   chan struct{} // closed after exit
	stderr *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) add(line string) { s.mu.Lock(); s.b.WriteString(line + "\n"); s.mu.Unlock() }
func (s *syncBuffer) String() string  { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

type harness struct {
	t    testing.TB
	dir  string
	addr string
	bin  string // fake terminal/opener directory, first on PATH
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir()}
	h.addr = coredt.StartBus(t)
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", h.addr)
	h.bin = filepath.Join(h.dir, "bin")
	if err := os.MkdirAll(h.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Fake terminal and opener: record argv, NUL-separated.
	for name, out := range map[string]string{"x-terminal-emulator": "terminal.argv", "xdg-open": "opener.argv"} {
		script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$CORRAL_APPTEST_DIR/" + out + ".tmp\"\n" +
			"mv \"$CORRAL_APPTEST_DIR/" + out + ".tmp\" \"$CORRAL_APPTEST_DIR/" + out + "\"\n"
		if err := os.WriteFile(filepath.Join(h.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func (h *harness) writeState(st app.State) {
	h.t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		h.t.Fatal(err)
	}
	tmp := filepath.Join(h.dir, "state.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.dir, "state.json")); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) start(refresh time.Duration) *child {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env := []string{}
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "TERMINAL=") && !strings.HasPrefix(e, "PATH=") {
			env = append(env, e)
		}
	}
	cmd.Env = append(env,
		childEnv+"=1",
		"GORACE=atexit_sleep_ms=0",
		"CORRAL_APPTEST_DIR="+h.dir,
		"CORRAL_APPTEST_REFRESH="+refresh.String(),
		"PATH="+h.bin+":"+os.Getenv("PATH"),
	)
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	c := &child{cmd: cmd, exited: make(chan error, 1), done: make(chan struct{}), stderr: &syncBuffer{}}
	var wg sync.WaitGroup
	pump := func(r io.Reader) {
		defer wg.Done()
		s := bufio.NewScanner(r)
		for s.Scan() {
			c.stderr.add(s.Text())
			if testing.Verbose() {
				h.t.Logf("app[%d]: %s", cmd.Process.Pid, s.Text())
			}
		}
	}
	wg.Add(2)
	go pump(stdout)
	go pump(stderr)
	go func() { wg.Wait(); c.exited <- cmd.Wait(); close(c.done) }()
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
		}
	})
	return c
}

func (h *harness) calls() []call {
	b, _ := os.ReadFile(filepath.Join(h.dir, "calls.jsonl"))
	var out []call
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c call
		if json.Unmarshal([]byte(line), &c) == nil {
			out = append(out, c)
		}
	}
	return out
}

func (h *harness) waitCall(want call) {
	h.t.Helper()
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		for _, c := range h.calls() {
			if c == want {
				return true
			}
		}
		return false
	}) {
		h.t.Fatalf("backend never got %+v; calls: %+v", want, h.calls())
	}
}

func (h *harness) waitArgv(file string, want []string) {
	h.t.Helper()
	var got []string
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(h.dir, file))
		if err != nil {
			return false
		}
		got = strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		return reflect.DeepEqual(got, want)
	}) {
		h.t.Fatalf("%s = %q, want %q", file, got, want)
	}
}

func (h *harness) deny(c *child, box string, d menu.DeniedHost) {
	h.t.Helper()
	b, _ := json.Marshal(denial{Box: box, D: d})
	f, err := os.OpenFile(filepath.Join(h.dir, "denials.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	f.Write(append(b, '\n'))
	f.Close()
	if err := c.cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		h.t.Fatal(err)
	}
}

// openItem waits for the app's StatusNotifierItem and returns it.
func openItem(t *testing.T, conn interface{}, w *desktoptest.Watcher) *desktoptest.Item {
	t.Helper()
	var id string
	select {
	case id = <-w.Registered:
	case <-time.After(15 * time.Second):
		t.Fatal("app never called RegisterStatusNotifierItem")
	}
	busName := id[:strings.Index(id, "/")]
	var item *desktoptest.Item
	var err error
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		item, err = desktoptest.OpenItem(w.Conn(), busName, "/StatusNotifierItem")
		return err == nil
	}) {
		t.Fatalf("opening item %s: %v", busName, err)
	}
	return item
}

// waitMenu waits until the live menu, as GetLayout returns it, equals want.
func waitMenu(t *testing.T, item *desktoptest.Item, want string) *desktoptest.MenuNode {
	t.Helper()
	var root *desktoptest.MenuNode
	var got string
	if !desktoptest.WaitFor(10*time.Second, func() bool {
		_, r, err := item.Layout()
		if err != nil {
			return false
		}
		root, got = r, r.Dump()
		return got == want
	}) {
		t.Fatalf("menu over D-Bus:\n%s\nwant:\n%s", got, want)
	}
	return root
}

func click(t *testing.T, item *desktoptest.Item, n *desktoptest.MenuNode, what string) {
	t.Helper()
	if n == nil {
		t.Fatalf("no menu item %s", what)
	}
	if err := item.Click(n.ID); err != nil {
		t.Fatalf("clicking %s: %v", what, err)
	}
}

var (
	web = menu.BoxView{Name: "web-3f2a1c", Project: "/home/u/src/web", State: boxstate.Running,
		MemBytes: 1288490189, MemCapBytes: 4 << 30, Idle: 12 * time.Minute, IdleDue: true}
	api = menu.BoxView{Name: "api-77aa01", Project: "/home/u/src/api", State: boxstate.Stopped, MemCapBytes: 2 << 30}
)

func TestAppOverDBus(t *testing.T) {
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	notifyd, err := desktoptest.StartFakeNotifyd(conn)
	if err != nil {
		t.Fatal(err)
	}

	denied := menu.DeniedHost{Host: "api.example.test", Port: 443, Count: 3, Last: time.Now().Add(-time.Minute).Truncate(time.Second)}
	// Real folders: the app checks a project folder before a terminal
	// gets it.
	src := realDir(t, t.TempDir())
	for _, d := range []string{"web", "api", "new"} {
		if err := os.Mkdir(filepath.Join(src, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w1, api := web, api
	w1.Project, api.Project = filepath.Join(src, "web"), filepath.Join(src, "api")
	w1.Denied = []menu.DeniedHost{denied}
	w1.Detached = []menu.SessionView{{Name: "claude", Agent: "claude", Activity: time.Now()}}
	w1.Ports = []int{3000}
	st := app.State{Boxes: []menu.BoxView{w1, api}, Projects: []menu.Project{{Dir: filepath.Join(src, "new"), LastUsed: time.Now()}}}
	h.writeState(st)
	c := h.start(100 * time.Millisecond)
	item := openItem(t, conn, w)

	if title, _ := item.Prop("Title"); title != "corral" {
		t.Errorf("Title = %q", title)
	}
	// The live menu is exactly the model's menu.
	want := menu.Build(st, menu.UI{Now: time.Now()}, menu.Limits{}).Text()
	root := waitMenu(t, item, want)
	if !strings.HasPrefix(want, "corral · 1 of 2 running · 1.2 GiB [disabled]\n○ api-77aa01  stopped >\n") ||
		!strings.Contains(want, "● web-3f2a1c  1.2 GiB / 4 GiB · idle 12m · 1 denied >\n") {
		t.Errorf("unexpected model menu:\n%s", want)
	}

	webNode := root.Find(menu.BoxTitle(w1, 28))
	apiNode := root.Find(menu.BoxTitle(api, 28))
	if webNode == nil || apiNode == nil {
		t.Fatalf("box items missing:\n%s", root.Dump())
	}

	t.Run("stop", func(t *testing.T) {
		click(t, item, webNode.Find("Stop"), "Stop")
		h.waitCall(call{Op: "stop", Box: "web-3f2a1c"})
		click(t, item, apiNode.Find("Start"), "Start")
		h.waitCall(call{Op: "start", Box: "api-77aa01"})
		click(t, item, root.Find("Stop idle boxes (1)"), "Stop idle boxes")
		h.waitCall(call{Op: "stop-idle"})
	})
	t.Run("allow for session", func(t *testing.T) {
		host := webNode.Find("Denied hosts (1)")
		if host == nil || len(host.Children) == 0 {
			t.Fatalf("no denied hosts submenu:\n%s", root.Dump())
		}
		click(t, item, host.Children[0].Find("Allow for this session"), "Allow for this session")
		h.waitCall(call{Op: "allow", Box: "web-3f2a1c", Host: "api.example.test", Scope: "session"})
		click(t, item, host.Children[0].Find("Allow *.example.test"), "Allow *.example.test")
		h.waitCall(call{Op: "allow", Box: "web-3f2a1c", Host: "example.test", Scope: "domain"})
	})
	t.Run("open session in terminal", func(t *testing.T) {
		click(t, item, apiNode.Find("Open Claude session"), "Open Claude session")
		h.waitArgv("terminal.argv", []string{"-e", "/opt/corral/bin/corral", "claude", "-C", api.Project})
		click(t, item, apiNode.Find("Open shell"), "Open shell")
		h.waitArgv("terminal.argv", []string{"-e", "/opt/corral/bin/corral", "shell", "-C", api.Project})
		click(t, item, root.Find("new (new box)"), "project new")
		h.waitArgv("terminal.argv", []string{"-e", "/opt/corral/bin/corral", "claude", "-C", filepath.Join(src, "new")})
		click(t, item, webNode.Find("Attach claude · active"), "Attach claude")
		h.waitArgv("terminal.argv", []string{"-e", "/opt/corral/bin/corral", "attach", "web-3f2a1c", "claude"})
	})
	t.Run("open config and log", func(t *testing.T) {
		click(t, item, root.Find("Open config"), "Open config")
		h.waitArgv("opener.argv", []string{"/etc/corral/config.toml"})
		click(t, item, webNode.Find("Show egress log"), "Show egress log")
		h.waitArgv("opener.argv", []string{"/var/log/corral/web-3f2a1c.egress.log"})
		click(t, item, webNode.Find("Reveal project"), "Reveal project")
		h.waitArgv("opener.argv", []string{w1.Project})
		click(t, item, webNode.Find("Open localhost:3000"), "Open localhost:3000")
		h.waitArgv("opener.argv", []string{"http://localhost:3000/"})
	})
	t.Run("rebuild needs two clicks", func(t *testing.T) {
		click(t, item, webNode.Find("Rebuild…"), "Rebuild…")
		var confirm *desktoptest.MenuNode
		if !desktoptest.WaitFor(10*time.Second, func() bool {
			_, r, err := item.Layout()
			if err == nil {
				confirm = r.Find("Click again to rebuild web-3f2a1c")
			}
			return confirm != nil
		}) {
			t.Fatal("no confirmation item after the first click")
		}
		for _, c := range h.calls() {
			if c.Op == "rebuild" {
				t.Fatal("rebuild called after one click")
			}
		}
		click(t, item, confirm, "confirm rebuild")
		h.waitCall(call{Op: "rebuild", Box: "web-3f2a1c"})
	})

	t.Run("state change redraws", func(t *testing.T) {
		st2 := app.State{Boxes: []menu.BoxView{{Name: "web-3f2a1c", Project: w1.Project, State: boxstate.Stopped}, api}}
		h.writeState(st2)
		r := waitMenu(t, item, menu.Build(st2, menu.UI{Now: time.Now()}, menu.Limits{}).Text())
		if r.Find("Stop idle boxes (0)") == nil {
			t.Errorf("stop idle count not updated:\n%s", r.Dump())
		}
	})

	t.Run("denial notification and action", func(t *testing.T) {
		d := menu.DeniedHost{Host: "registry.example.test", Port: 443, Count: 1, Last: time.Now()}
		h.deny(c, "api-77aa01", d)
		n, err := notifyd.WaitPosted(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if n.AppName != "corral" || !strings.Contains(n.Summary, "registry.example.test") || !strings.Contains(n.Body, "api-77aa01") {
			t.Errorf("notification = %+v", n)
		}
		if want := []string{"allow", "Allow", "allow-once", "Allow once"}; !reflect.DeepEqual(n.Actions, want) {
			t.Errorf("actions = %q, want %q", n.Actions, want)
		}
		if !desktoptest.WaitFor(10*time.Second, func() bool {
			_, r, err := item.Layout()
			return err == nil && r.Find("Denied hosts (1)") != nil
		}) {
			_, r, _ := item.Layout()
			t.Errorf("denial not in menu:\n%s", r.Dump())
		}
		// A retry loop in the box: the same (box, host) again within the
		// cool-down posts nothing; another host does.
		h.deny(c, "api-77aa01", d)
		h.deny(c, "api-77aa01", menu.DeniedHost{Host: "other.example.test", Port: 80, Count: 1, Last: time.Now()})
		n2, err := notifyd.WaitPosted(10 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(n2.Summary, "other.example.test") {
			t.Errorf("second notification = %q, want the other host (cool-down)", n2.Summary)
		}

		// "Allow" on the first notification allows the host for good;
		// "Allow once" on the second allows once.
		if err := notifyd.Invoke(n.ID, "allow"); err != nil {
			t.Fatal(err)
		}
		h.waitCall(call{Op: "allow", Box: "api-77aa01", Host: "registry.example.test", Scope: "always"})
		if err := notifyd.Invoke(n2.ID, "allow-once"); err != nil {
			t.Fatal(err)
		}
		h.waitCall(call{Op: "allow", Box: "api-77aa01", Host: "other.example.test", Scope: "once"})
	})

	t.Run("second instance refused", func(t *testing.T) {
		c2 := h.start(time.Second)
		select {
		case err := <-c2.exited:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("second instance exited with %v, want status 3", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("second instance kept running")
		}
		wantMsg := fmt.Sprintf("another instance (pid %d)", c.cmd.Process.Pid)
		if !strings.Contains(c2.stderr.String(), wantMsg) {
			t.Errorf("second instance said %q, want it to contain %q", c2.stderr.String(), wantMsg)
		}
	})

	t.Run("quit", func(t *testing.T) {
		_, r, err := item.Layout()
		if err != nil {
			t.Fatal(err)
		}
		q := r.Find("Quit corral")
		if q == nil {
			t.Fatalf("no Quit item:\n%s", r.Dump())
		}
		// The app may exit before it replies to the Event call, so the
		// call's error says nothing; the exit status does.
		_ = item.Click(q.ID)
		select {
		case err := <-c.exited:
			if err != nil {
				t.Fatalf("app exited with %v\n%s", err, c.stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("app did not exit after Quit")
		}
	})
}

func TestSnapshotErrorShown(t *testing.T) {
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.dir, "snapshot-error"), []byte("reading lima dir: permission denied"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := h.start(100 * time.Millisecond)
	item := openItem(t, conn, w)
	want := menu.Build(app.State{}, menu.UI{SnapshotErr: "reading lima dir: permission denied"}, menu.Limits{}).Text()
	waitMenu(t, item, want)
	// Recovery: the error goes away with the next good snapshot.
	os.Remove(filepath.Join(h.dir, "snapshot-error"))
	h.writeState(app.State{Boxes: []menu.BoxView{api}})
	waitMenu(t, item, menu.Build(app.State{Boxes: []menu.BoxView{api}}, menu.UI{}, menu.Limits{}).Text())
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.exited:
		if err != nil {
			t.Fatalf("app exited with %v after SIGTERM (context cancel)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("app did not exit after its context was cancelled")
	}
}

// TestAppSweepsOnTimer: the app stops idle boxes on its own timer, without
// a click, so idle_stop holds for a user who only runs the app.
func TestAppSweepsOnTimer(t *testing.T) {
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	if _, err := desktoptest.StartWatcher(conn); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CORRAL_APPTEST_SWEEP", "200ms")
	h.writeState(app.State{Boxes: []menu.BoxView{web}})
	h.start(time.Second)
	h.waitCall(call{Op: "stop-idle"})
}

// TestNotifiesDenialsOfBoxesCreatedLater: the app starts with no boxes; a
// box is created, its real broker denies a request, and the notification
// arrives (the denial watcher follows the set of boxes as it changes).
func TestNotifiesDenialsOfBoxesCreatedLater(t *testing.T) {
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	w, err := desktoptest.StartWatcher(conn)
	if err != nil {
		t.Fatal(err)
	}
	notifyd, err := desktoptest.StartFakeNotifyd(conn)
	if err != nil {
		t.Fatal(err)
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "home")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CORRAL_APPTEST_HOME", l.Home)
	h.start(200 * time.Millisecond)
	item := openItem(t, conn, w)
	waitMenu(t, item, menu.Build(app.State{}, menu.UI{}, menu.Limits{}).Text())

	// corral up: the box's metadata, then its broker.
	proj := filepath.Join(t.TempDir(), "web")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	proj, _ = filepath.EvalSymlinks(proj)
	p, err := project.Resolve(proj, l.LimaHome())
	if err != nil {
		t.Fatal(err)
	}
	if err := boxmeta.Write(l, boxmeta.Meta{Name: p.Box, Project: proj, Network: "broker", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- broker.Run(ctx, broker.Options{Layout: l, Box: p.Box, Listen: "127.0.0.1:0",
			Listening: func(a net.Addr) { addrc <- a.String() }})
	}()
	t.Cleanup(func() { cancel(); <-done })
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("broker: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("broker did not listen")
	}
	// A denied request: the broker refuses the name before resolving it.
	conn2, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn2, "CONNECT blocked.example.test:443 HTTP/1.1\r\nHost: blocked.example.test:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn2), nil)
	conn2.Close()
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT through the broker: %v %v", resp, err)
	}

	n, err := notifyd.WaitPosted(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(n.Summary, p.Box) || !strings.Contains(n.Summary, "blocked.example.test") {
		t.Errorf("notification %+v", n)
	}
}

// TestNotifiesGitGuardRevert: a box that could write its project's .git
// (the opt-out) changed core.fsmonitor; the app's sweep reverts it and
// posts exactly one notification, with no actions. The project's name
// holds an escape character: the notification shows it escaped.
func TestNotifiesGitGuardRevert(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	h := newHarness(t)
	conn := coredt.Conn(t, h.addr)
	notifyd, err := desktoptest.StartFakeNotifyd(conn)
	if err != nil {
		t.Fatal(err)
	}
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "home")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(t.TempDir(), "we\x1b[31mb")
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	proj, _ = filepath.EvalSymlinks(proj)
	const name = "web-1"
	if err := boxmeta.Write(l, boxmeta.Meta{Name: name, Project: proj, VMType: "vz", GitShadowOff: true, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := (gitshadow.Guard{Dir: l.GitGuardDir(name)}).Record(proj, time.Now()); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(proj, ".git", "config")
	orig, _ := os.ReadFile(cfg)
	if out, err := exec.Command("git", "-C", proj, "config", "core.fsmonitor", "touch /tmp/pwned").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v %s", err, out)
	}
	t.Setenv("CORRAL_APPTEST_HOME", l.Home)
	t.Setenv("CORRAL_APPTEST_SWEEP", "200ms")
	h.start(time.Second)

	n, err := notifyd.WaitPosted(20 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("posted %q / %q", n.Summary, n.Body)
	if len(n.Actions) != 0 {
		t.Errorf("actions %q, want none", n.Actions)
	}
	if !strings.HasPrefix(n.Body, "corral reverted a change to ") || !strings.HasSuffix(n.Body, "/.git made while box "+name+" could write it: modified config") || strings.ContainsRune(n.Summary+n.Body, 0x1b) {
		t.Errorf("notification %q / %q", n.Summary, n.Body)
	}
	if b, _ := os.ReadFile(cfg); string(b) != string(orig) {
		t.Errorf("config not reverted: %s", b)
	}
	// Several more sweeps: the event was notified once.
	if extra, err := notifyd.WaitPosted(time.Second); err == nil {
		t.Errorf("second notification %+v", extra)
	}
}

func realDir(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
