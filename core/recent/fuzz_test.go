package recent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/core/paths"
)

// FuzzRead: whatever recent.json holds (anyone who can write ~/.corral
// can write it, and a crash or a bad entry must not reach the menu), Read
// returns at most MaxEntries clean, absolute, distinct folders.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"projects":[{"dir":"/a","used":"2026-01-01T00:00:00Z"},{"dir":"/a/../b"}]}`))
	f.Add([]byte(`{"projects":[{"dir":"relative"},{"dir":""},{"dir":"//x/"}]}`))
	f.Add([]byte(`{"projects":null}`))
	l := paths.Layout{Home: f.TempDir()}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(l.RecentProjects(), data, 0o600); err != nil {
			t.Fatal(err)
		}
		got := Read(l)
		if len(got) > MaxEntries {
			t.Fatalf("%d entries", len(got))
		}
		seen := map[string]bool{}
		for i, e := range got {
			if !filepath.IsAbs(e.Dir) || filepath.Clean(e.Dir) != e.Dir || seen[e.Dir] {
				t.Fatalf("entry %q", e.Dir)
			}
			if i > 0 && got[i-1].Used.Before(e.Used) {
				t.Fatalf("not newest first: %v", got)
			}
			seen[e.Dir] = true
		}
	})
}
