package box

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/procinfo"
)

// A real process whose argv is a broker's (/bin/sh running a script named
// "broker": argv = sh broker --box web --listen ...) is the broker of web
// only with its own start time; the test process itself, or any PID after
// the process is gone, is no broker: stop, rm and gc signal none of them.
func TestBrokerAliveIdentifiesByArgvAndStart(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broker"), []byte("sleep 30\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "broker", "--box", "web", "--listen", "127.0.0.1:1")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	var id procinfo.Identity
	deadline := time.Now().Add(5 * time.Second)
	for {
		var err error
		if id, err = procinfo.Read(pid); err == nil && len(id.Argv) > 1 && id.Argv[1] == "broker" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child never showed its argv: %+v, %v", id, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, tc := range []struct {
		name  string
		pid   int
		box   string
		start int64
		want  bool
	}{
		{"the broker, same start", pid, "web", id.Start, true},
		{"the broker, no start saved", pid, "web", 0, true},
		{"another box's broker", pid, "api", id.Start, false},
		{"a reused pid (other start)", pid, "web", id.Start + 1, false},
		{"an unrelated process", os.Getpid(), "web", 0, false},
		{"no pid", 0, "web", 0, false},
	} {
		if got := brokerAlive(tc.pid, tc.box, tc.start); got != tc.want {
			t.Errorf("%s: brokerAlive = %v, want %v", tc.name, got, tc.want)
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if brokerAlive(pid, "web", id.Start) {
		t.Error("a dead broker is alive")
	}
}

func TestIsBroker(t *testing.T) {
	argv := []string{"/Applications/Corral.app/Contents/MacOS/corral", "broker", "--box", "web", "--listen", "127.0.0.1:42001"}
	if !isBroker(procinfo.Identity{Argv: argv, Start: 7}, "web", 7) {
		t.Error("the broker not recognised")
	}
	for _, id := range []procinfo.Identity{
		{Argv: argv, Start: 8},
		{Argv: []string{"/usr/bin/vim", "broker", "--box", "web"}[:1], Start: 7},
		{Argv: []string{"corral", "claude", "--box", "web"}, Start: 7},
		{Argv: nil, Start: 7},
	} {
		if isBroker(id, "web", 7) {
			t.Errorf("%+v taken for the broker", id)
		}
	}
}
