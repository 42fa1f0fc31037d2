package recent

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/hint"
	"github.com/corral-dev/corral/core/paths"
	"github.com/corral-dev/corral/core/untrusted/untrustedtest"
)

func layout(t *testing.T) paths.Layout {
	t.Helper()
	return paths.Layout{Home: filepath.Join(t.TempDir(), "corral")}
}

func dirs(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Dir)
	}
	return out
}

func TestRecordOrderAndCap(t *testing.T) {
	l := layout(t)
	if got := Read(l); len(got) != 0 {
		t.Fatalf("no file: %v", got)
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for i := range MaxEntries + 5 {
		if err := Record(l, fmt.Sprintf("/src/p%02d", i), t0.Add(time.Duration(i)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	got := Read(l)
	if len(got) != MaxEntries || got[0].Dir != "/src/p24" || got[MaxEntries-1].Dir != "/src/p05" {
		t.Fatalf("list = %v", dirs(got))
	}
	// Used again: moves to the front, once.
	if err := Record(l, "/src/p10", t0.Add(48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	got = Read(l)
	if got[0].Dir != "/src/p10" || len(got) != MaxEntries || strings.Count(strings.Join(dirs(got), " "), "/src/p10") != 1 {
		t.Fatalf("after reuse: %v", dirs(got))
	}
	if fi, err := os.Stat(l.RecentProjects()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file mode: %v %v", fi, err)
	}
	if err := Record(l, "relative/dir", t0); err == nil {
		t.Error("a relative dir was recorded")
	}
}

// TestRecordSkipsFreshWrite: a run of sessions in one project writes the
// file once.
func TestRecordSkipsFreshWrite(t *testing.T) {
	l := layout(t)
	t0 := time.Now()
	if err := Record(l, "/src/web", t0); err != nil {
		t.Fatal(err)
	}
	fi0, _ := os.Stat(l.RecentProjects())
	if err := Record(l, "/src/web", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	fi1, _ := os.Stat(l.RecentProjects())
	if !os.SameFile(fi0, fi1) {
		t.Error("the file was rewritten for the same project a minute later")
	}
	if err := Record(l, "/src/web", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := Read(l); len(got) != 1 || !got[0].Used.Equal(t0.Add(time.Hour)) {
		t.Errorf("an hour later: %+v", got)
	}
}

// TestRecordConcurrent: writers in parallel (as CLI sessions and the app
// are) lose no entry.
func TestRecordConcurrent(t *testing.T) {
	l := layout(t)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range 12 {
		wg.Go(func() {
			if err := Record(l, fmt.Sprintf("/src/c%d", i), t0.Add(time.Duration(i)*time.Second)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := Read(l); len(got) != 12 {
		t.Errorf("%d entries, want 12: %v", len(got), dirs(got))
	}
}

func TestReadHostileFile(t *testing.T) {
	l := layout(t)
	if err := os.MkdirAll(l.Home, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"not json":  "{",
		"oversized": `{"projects":[{"dir":"/a","used":"2026-01-01T00:00:00Z"}],"x":"` + strings.Repeat("x", maxFile) + `"}`,
	} {
		if err := os.WriteFile(l.RecentProjects(), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := Read(l); len(got) != 0 {
			t.Errorf("%s: %v", name, got)
		}
	}
	data := `{"projects":[{"dir":"relative"},{"dir":"/a/../b"},{"dir":""},{"dir":"/ok","used":"2026-01-01T00:00:00Z"},{"dir":"/ok"}]}`
	if err := os.WriteFile(l.RecentProjects(), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := dirs(Read(l)); len(got) != 1 || got[0] != "/ok" {
		t.Errorf("kept %q, want only /ok", got)
	}
}

// A bad recent.json never hangs or exhausts memory: Read is an empty list
// at once; Record replaces bad content (only suggestions are lost) and
// refuses a special file with an error naming it and a hint.
func TestBadRecentFile(t *testing.T) {
	for _, kind := range untrustedtest.All {
		t.Run(string(kind), func(t *testing.T) {
			l := layout(t)
			untrustedtest.Make(t, l.RecentProjects(), kind)
			done := make(chan error, 1)
			go func() {
				if got := Read(l); len(got) != 0 {
					done <- fmt.Errorf("read %v", got)
					return
				}
				done <- Record(l, "/src/p", time.Now())
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("blocked")
			}
			if slices.Contains(untrustedtest.Special, kind) || kind == untrustedtest.Sparse || kind == untrustedtest.Huge {
				if err == nil || !strings.Contains(err.Error(), l.RecentProjects()) || hint.Of(err) == "" {
					t.Fatalf("Record: %v, want an error naming the file with a hint", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := Read(l); len(got) != 1 || got[0].Dir != "/src/p" {
				t.Fatalf("after Record over bad content: %v", got)
			}
		})
	}
}
