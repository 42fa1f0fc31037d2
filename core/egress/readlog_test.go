package egress

import (
	"testing"
	"time"
)

// TestFollowWatch: Follow watches the log's directory only where a
// directory watch is one descriptor (inotify); elsewhere (kqueue opens one
// per file in the directory) it polls, often enough for a notification.
func TestFollowWatch(t *testing.T) {
	if w, every := followWatch("linux"); !w || every != followPoll {
		t.Errorf("linux: watch %v every %v", w, every)
	}
	for _, goos := range []string{"darwin", "freebsd"} {
		if w, every := followWatch(goos); w || every > time.Second {
			t.Errorf("%s: watch %v every %v", goos, w, every)
		}
	}
}
