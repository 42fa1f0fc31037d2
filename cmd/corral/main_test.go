package main

import (
	"os"
	"strings"
	"testing"

	"github.com/corral-dev/corral/core/paths"
)

// TestMainDispatchesGuestConn runs guest-conn through run, the way qemu
// starts corral, without a command tree: the test's stdin is not a socket, so it
// fails quietly into the broker log with the run's exit codes.
func TestMainDispatchesGuestConn(t *testing.T) {
	home := t.TempDir()
	t.Setenv(paths.EnvHome, home)
	l := paths.Layout{Home: home}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"corral", "guest-conn"}); code != 2 {
		t.Errorf("no box: exit %d, want 2", code)
	}
	if code := run([]string{"corral", "guest-conn", "b", "extra"}); code != 2 {
		t.Errorf("two boxes: exit %d, want 2", code)
	}
	if code := run([]string{"corral", "guest-conn", "b"}); code != 1 {
		t.Errorf("stdin not a socket: exit %d, want 1", code)
	}
	if b, _ := os.ReadFile(l.BrokerLog("b")); !strings.Contains(string(b), "guest-conn: box b: stdin is not a socket") {
		t.Errorf("broker log %q", b)
	}
}
