package box

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/boxmeta"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/project"
)

func TestHostSessionsAreFilesNotMetadata(t *testing.T) {
	s, r := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	box := r.Project.Box
	if got := s.LiveSessions(box); len(got) != 0 {
		t.Fatalf("live before any session: %v", got)
	}
	now := time.Now()
	if err := s.addSession(box, Session{ID: "aa11", PID: os.Getpid(), Agent: "shell", Started: now}); err != nil {
		t.Fatal(err)
	}
	// A session of a process that is gone (a crashed corral) is not live,
	// and its file is removed by the reader.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	if err := s.addSession(box, Session{ID: "bb22", PID: dead.Process.Pid, Agent: "shell", Started: now}); err != nil {
		t.Fatal(err)
	}
	// Files a session could not have written are ignored.
	_ = os.WriteFile(filepath.Join(s.Layout.SessionsDir(box), "../x"), []byte("{}"), 0o600)
	_ = os.WriteFile(filepath.Join(s.Layout.SessionsDir(box), "Bad.Name"), []byte(`{"id":"Bad.Name","pid":1}`), 0o600)
	live := s.LiveSessions(box)
	if len(live) != 1 || live[0].ID != "aa11" || live[0].Agent != "shell" {
		t.Fatalf("live = %+v", live)
	}
	if _, err := os.Stat(filepath.Join(s.Layout.SessionsDir(box), "bb22")); !os.IsNotExist(err) {
		t.Errorf("dead session's file left: %v", err)
	}
	if _, err := os.Stat(s.Layout.BoxMeta(box)); !os.IsNotExist(err) {
		t.Errorf("a session wrote box metadata: %v", err)
	}
	touched := s.sessionsTouched(box)
	if touched.IsZero() || s.lastActivity(boxmeta.Meta{Name: box}).Before(touched) {
		t.Errorf("last activity %v does not count the session directory (%v)", s.lastActivity(boxmeta.Meta{Name: box}), touched)
	}
	s.removeSession(box, "aa11")
	s.removeSession(box, "../../boxes/x") // never a path
	if got := s.LiveSessions(box); len(got) != 0 {
		t.Errorf("live after end: %v", got)
	}
	st := s.StatusOf(boxmeta.Meta{Name: box})
	if st.Live != 0 || st.Sessions != nil {
		t.Errorf("status %+v", st)
	}
}

func TestTemplateHashIsCachedByItsInputs(t *testing.T) {
	s, r := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	exe := filepath.Join(t.TempDir(), "corral")
	if err := os.WriteFile(exe, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	s.Exe = exe
	want, err := Render(s.Layout, r, 4242, false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.templateHash(r, 4242)
	if err != nil || got != want.Hash {
		t.Fatalf("first templateHash = %q, %v; want %q", got, err, want.Hash)
	}
	path := filepath.Join(s.Layout.CacheDir(), r.Project.Box+".template")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no cache entry: %v", err)
	}
	// A hit does not render: a planted entry with the right key is what
	// comes back.
	key, _ := s.templateKey(r, 4242)
	if err := os.WriteFile(path, []byte(`{"key":"`+key+`","hash":"planted"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.templateHash(r, 4242); got != "planted" {
		t.Errorf("cache hit = %q", got)
	}
	// Any input change misses: the config, the broker port, the binary.
	c := r
	cpus := 1
	c.Loaded.Config.CPUs = &cpus
	for name, tc := range map[string]struct {
		r    boxmeta.Resolved
		port int
		exe  string
	}{
		"config": {c, 4242, "v1"},
		"port":   {r, 4243, "v1"},
		"binary": {r, 4242, "v2 longer"},
	} {
		if err := os.WriteFile(exe, []byte(tc.exe), 0o755); err != nil {
			t.Fatal(err)
		}
		want, err := Render(s.Layout, tc.r, tc.port, false)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := s.templateHash(tc.r, tc.port); got != want.Hash || got == "planted" {
			t.Errorf("%s changed: templateHash = %q, want %q", name, got, want.Hash)
		}
		if err := os.WriteFile(path, []byte(`{"key":"`+key+`","hash":"planted"}`), 0o600); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(exe, []byte("v1"), 0o755)
	}
}

func TestSSHCommandUsesCorralsMaster(t *testing.T) {
	s, r := newTestService(t, &fakeLima{insts: map[string]string{}, fail: map[string]string{}})
	box := r.Project.Box
	// No master can be started (no Lima instance): a fresh connection,
	// with the same SendEnv.
	argv, err := s.sshCommand(context.Background(), box, ttyNone, []string{"--tmux", "new", "job", "shell", "/p q", "echo", "it's"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(s.Layout.LimaHome(), box, "ssh.config")
	want := []string{"ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "SendEnv=CORRAL_FWD_*",
		"lima-" + box, "-o", "LogLevel=ERROR", "-T", "--",
		`/usr/local/bin/corral-launch '--tmux' 'new' 'job' 'shell' '/p q' 'echo' 'it'\''s'`}
	if !slices.Equal(argv, want) {
		t.Errorf("argv\n got %q\nwant %q", argv, want)
	}
	// A live master (something listening on the control socket): a
	// channel over it.
	sock := s.Layout.SSHMaster(box)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	argv, err = s.sshCommand(context.Background(), box, ttyForce, []string{"--attach", "job"})
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"ssh", "-F", cfg, "-o", "ControlMaster=no", "-o", "ControlPath=" + sock, "-o", "SendEnv=CORRAL_FWD_*",
		"lima-" + box, "-o", "LogLevel=ERROR", "-t", "-t", "--", `/usr/local/bin/corral-launch '--attach' 'job'`}
	if !slices.Equal(argv, want) {
		t.Errorf("argv\n got %q\nwant %q", argv, want)
	}
	if st, err := os.Stat(filepath.Dir(sock)); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %v %v", st, err)
	}
}

func TestSSHMasterPathFitsTheSocketLimit(t *testing.T) {
	// The longest box name core/project allows under a home must give a
	// control socket path (plus ssh's 17-byte temporary suffix) within
	// the limit.
	for _, home := range []string{"/h", "/tmp/ce.abcdef/h", "/Users/someone-with-a-long-name/.corral"} {
		l := paths.Layout{Home: home}
		n := project.MaxNameLen(l.LimaHome())
		if n < 1 {
			continue
		}
		p := l.SSHMaster(strings.Repeat("a", n)) + ".0123456789abcdef"
		if len(p) > project.MaxSockPath {
			t.Errorf("home %s: %d bytes: %s", home, len(p), p)
		}
	}
}
