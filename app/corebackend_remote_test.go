package app

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/box/boxtest"
	"github.com/corral-dev/corral/core/boxstate"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/remote"
	"github.com/corral-dev/corral/core/remotebox"
	"github.com/corral-dev/corral/core/version"
)

// fakeHost answers the remote corral's commands as a host would, and
// records each remote command line.
type fakeHost struct {
	unreachable bool
	lines       []string
}

func (f *fakeHost) exec(_ context.Context, _ string, argv []string, _ io.Reader, stdout, stderr io.Writer) (int, error) {
	cmd := argv[len(argv)-1]
	f.lines = append(f.lines, cmd)
	switch {
	case f.unreachable:
		io.WriteString(stderr, "ssh: connect to host gpu.test port 22: Connection refused\n")
		return 255, nil
	case strings.HasSuffix(cmd, `'version' '--json'`):
		io.WriteString(stdout, `{"version":"`+version.Version+`","commit":"`+version.Commit+`"}`)
	case strings.HasSuffix(cmd, `'ls' '--json'`):
		io.WriteString(stdout, `{"schema":"corral.boxes/v1","boxes":[{"name":"web-1","project":"/home/me/web","state":"Running","network":"broker","mem_bytes":1024,"memory_cap":4096,"live_sessions":1}]}`)
	case strings.Contains(cmd, `'egress'`):
		io.WriteString(stdout, `{"schema":"corral.egress/v1","box":"web-1","destinations":[{"host":"api.example.test","port":443,"allowed":false,"count":2,"last_seen":"2026-05-06T11:58:00Z","reason":"host-not-allowed"}]}`)
	}
	return 0, nil
}

func remoteBackend(t *testing.T) (*coreBackend, *fakeHost) {
	t.Helper()
	l := paths.Layout{Home: t.TempDir()}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	h, err := remote.NewHost("gpu", "ssh://me@gpu.test", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Add(l, h, false, audit.ActorCLI); err != nil {
		t.Fatal(err)
	}
	svc, _ := boxtest.Service(l, time.Now(), audit.ActorApp)
	f := &fakeHost{}
	return &coreBackend{svc: svc, remote: remotebox.Client{Runner: remote.Runner{Exec: f.exec, Batch: true}}}, f
}

// The app's remote backend: the hosts of hosts.toml, a host's boxes as the
// menu shows them (each with its host), an unreachable or unknown host as
// one reason, and each action one remote command with the scope's flag.
func TestRemoteBackend(t *testing.T) {
	b, f := remoteBackend(t)
	ctx := context.Background()
	hosts, err := b.RemoteHosts(ctx)
	if err != nil || len(hosts) != 1 || hosts[0].Name != "gpu" || hosts[0].URL != "ssh://me@gpu.test" {
		t.Fatalf("hosts %+v %v", hosts, err)
	}
	got := b.ReadHost(ctx, "gpu")
	want := menu.BoxView{Name: "web-1", Host: "gpu", Project: "/home/me/web", State: boxstate.Running, MemBytes: 1024, MemCapBytes: 4096, Sessions: 1,
		Denied: []menu.DeniedHost{{Host: "api.example.test", Port: 443, Count: 2, Last: time.Date(2026, 5, 6, 11, 58, 0, 0, time.UTC)}}}
	if got.Err != "" || got.Name != "gpu" || len(got.Boxes) != 1 || got.At.IsZero() {
		t.Fatalf("read %+v", got)
	}
	g := got.Boxes[0]
	if g.Name != want.Name || g.Host != want.Host || g.Project != want.Project || g.State != want.State || g.MemBytes != want.MemBytes ||
		g.MemCapBytes != want.MemCapBytes || g.Sessions != want.Sessions || len(g.Denied) != 1 || g.Denied[0].Host != "api.example.test" || !g.Denied[0].Last.Equal(want.Denied[0].Last) {
		t.Errorf("box %+v\nwant %+v", g, want)
	}
	if unknown := b.ReadHost(ctx, "nope"); !strings.Contains(unknown.Err, "host nope: unknown host") {
		t.Errorf("unknown host: %+v", unknown)
	}
	f.unreachable = true
	if down := b.ReadHost(ctx, "gpu"); down.Err != "cannot reach the host over ssh: ssh: connect to host gpu.test port 22: Connection refused" || down.Boxes != nil {
		t.Errorf("unreachable: %+v", down)
	}
	f.unreachable = false

	for _, tc := range []struct {
		do   func() error
		want string
	}{
		{func() error { return b.RemoteStart(ctx, "gpu", "web-1") }, `'start' '--' 'web-1'`},
		{func() error { return b.RemoteStop(ctx, "gpu", "web-1") }, `'stop' '--' 'web-1'`},
		{func() error { return b.RemoteAllow(ctx, "gpu", "web-1", "api.example.test", AllowAlways) }, `'allow' '--always' '--' 'web-1' 'api.example.test'`},
		{func() error { return b.RemoteAllow(ctx, "gpu", "web-1", "api.example.test:8443", AllowSession) }, `'allow' '--session' '--' 'web-1' 'api.example.test:8443'`},
		{func() error { return b.RemoteAllow(ctx, "gpu", "web-1", "api.example.test", AllowOnce) }, `'allow' '--once' '--' 'web-1' 'api.example.test'`},
		{func() error { return b.RemoteAllow(ctx, "gpu", "web-1", "api.example.test", AllowHour) }, `'allow' '--for' '1h0m0s' '--' 'web-1' 'api.example.test'`},
		{func() error { return b.RemoteAllow(ctx, "gpu", "web-1", "example.test", AllowDomain) }, `'allow' '--always' '--' 'web-1' '*.example.test'`},
	} {
		f.lines = nil
		if err := tc.do(); err != nil {
			t.Errorf("%s: %v", tc.want, err)
			continue
		}
		if len(f.lines) != 2 || !strings.HasSuffix(f.lines[1], tc.want) {
			t.Errorf("sent %q, want the check and %q", f.lines, tc.want)
		}
	}
	// A domain that is no registrable domain is refused before anything
	// is sent, as locally; so is an unknown host.
	f.lines = nil
	for _, err := range []error{
		b.RemoteAllow(ctx, "gpu", "web-1", "com", AllowDomain),
		b.RemoteStop(ctx, "nope", "web-1"),
	} {
		if err == nil {
			t.Error("accepted")
		}
	}
	if len(f.lines) != 0 {
		t.Errorf("sent %q", f.lines)
	}
}

// CommandArgv for a remote box: corral --host HOST claude -C DIR, with the
// host name and the path checked; nothing else opens a terminal there.
func TestCommandArgvRemote(t *testing.T) {
	argv, err := CommandArgv("/bin/corral", menu.Action{Kind: menu.ActOpenSession, Box: "web-1", Project: "/home/me/web", Remote: "gpu"})
	if err != nil || !slices.Equal(argv, []string{"/bin/corral", "--host", "gpu", "claude", "-C", "/home/me/web"}) {
		t.Errorf("argv %q %v", argv, err)
	}
	for _, a := range []menu.Action{
		{Kind: menu.ActOpenSession, Box: "web-1", Project: "-rf", Remote: "gpu"},
		{Kind: menu.ActOpenSession, Box: "web-1", Project: "/a/../b", Remote: "gpu"},
		{Kind: menu.ActOpenSession, Box: "web-1", Project: "", Remote: "gpu"},
		{Kind: menu.ActOpenSession, Box: "web-1", Project: "/a", Remote: "--oProxyCommand=x"},
		{Kind: menu.ActOpenShell, Box: "web-1", Project: "/a", Remote: "gpu"},
		{Kind: menu.ActAttach, Box: "web-1", Session: "claude", Remote: "gpu"},
	} {
		if argv, err := CommandArgv("/bin/corral", a); err == nil {
			t.Errorf("%+v: %q", a, argv)
		}
	}
}
