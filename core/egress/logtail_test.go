package egress

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// LogTail reads as Follow (from the end) or FollowAll (from the start)
// does, one Poll at a time, and a log that appears later from its start.
func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "web.jsonl")
	add := func(host string) {
		t.Helper()
		b, _ := json.Marshal(Entry{Time: time.Now(), Kind: KindConnect, Host: host, Port: 443})
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		f.Write(append(b, '\n'))
	}
	var got []string
	fn := func(e Entry) { got = append(got, e.Host) }

	late := NewLogTail(path, false, fn) // no log yet
	defer late.Close()
	add("a.test")
	all := NewLogTail(path, true, fn)
	defer all.Close()
	end := NewLogTail(path, false, fn)
	defer end.Close()
	late.Poll()
	all.Poll()
	end.Poll()
	if len(got) != 2 || got[0] != "a.test" || got[1] != "a.test" {
		t.Fatalf("first polls: %q, want the late and the from-start tails to read a.test", got)
	}
	got = nil
	add("b.test")
	for _, l := range []*LogTail{late, all, end} {
		l.Poll()
		l.Poll() // nothing new
	}
	if len(got) != 3 {
		t.Errorf("after an append: %q, want b.test three times", got)
	}
}
