package gitwatch

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/paths"
)

func TestRecord(t *testing.T) {
	l := paths.Layout{Home: filepath.Join(t.TempDir(), "h")}
	if err := l.Ensure(); err != nil {
		t.Fatal(err)
	}
	if got, err := Read(l, "b"); err != nil || got != nil {
		t.Fatalf("no record: %v %v", got, err)
	}
	now := time.Unix(1e9, 0).UTC()
	for i := range MaxSeen + 5 {
		if err := Add(l, "b", Seen{Path: fmt.Sprintf("/p/%d/.git", i), Kind: "directory", Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := Add(l, "b", Seen{Path: "/p/10/.git", Kind: "directory", Time: now}); err != nil { // seen already
		t.Fatal(err)
	}
	got, err := Read(l, "b")
	if err != nil || len(got) != MaxSeen || got[0].Path != "/p/5/.git" || got[MaxSeen-1].Path != fmt.Sprintf("/p/%d/.git", MaxSeen+4) {
		t.Fatalf("record: %d entries, first %v, err %v", len(got), got[0], err)
	}
	if err := Clear(l, "b"); err != nil {
		t.Fatal(err)
	}
	if got, _ := Read(l, "b"); got != nil {
		t.Errorf("after Clear: %v", got)
	}
}
