package egress

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// writeAtomic saves like an editor: temporary file, then rename.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestLiveReload(t *testing.T) {
	ep := portOf(t, echoServer(t))
	path := filepath.Join(t.TempDir(), "allow.txt")
	writeAtomic(t, path, "other.test\n")
	var loads atomic.Int32
	load := func() (*Policy, error) {
		defer loads.Add(1)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return ParsePolicy(strings.Fields(string(b)), []string{"127.0.0.0/8"})
	}
	initial, err := load()
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, nil, nil, func(c *Config) { c.Policy = initial })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- WatchFiles(ctx, []string{path}, load, p.srv.SetPolicy, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	allowed := func() bool {
		status, c, _, _ := rawConnect(t, p.addr, "allowed.test:"+ep)
		if c != nil {
			c.Close()
		}
		return status == 200
	}
	if allowed() {
		t.Fatal("allowed before reload")
	}
	// The watcher may not be registered yet: rewrite until a load happens.
	var lastWrite time.Time
	eventually(t, 10*time.Second, "the watcher to reload", func() bool {
		if time.Since(lastWrite) > 300*time.Millisecond {
			writeAtomic(t, path, "other.test\n")
			lastWrite = time.Now()
		}
		return loads.Load() > 1
	})
	writeAtomic(t, path, "allowed.test:*\n")
	start := time.Now()
	eventually(t, 10*time.Second, "the new policy", allowed)
	t.Logf("applied after %v", time.Since(start))

	// A bad file keeps the old policy.
	n := loads.Load()
	writeAtomic(t, path, "bad entry with spaces:x\n")
	eventually(t, 10*time.Second, "the bad file to be loaded", func() bool { return loads.Load() > n })
	if !allowed() {
		t.Fatal("bad file replaced the policy")
	}
}

// A change written after the caller's first load but before the watcher
// has its watches raises no event: WatchFiles loads once when it starts,
// so the change still applies, with no later write to wake it.
func TestWatchLoadsWhatChangedBeforeItStarted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "allow.txt")
	writeAtomic(t, path, "before.test\n")
	var applied atomic.Value
	load := func() (*Policy, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return ParsePolicy(strings.Fields(string(b)), nil)
	}
	if _, err := load(); err != nil { // the caller's first load
		t.Fatal(err)
	}
	writeAtomic(t, path, "after.test\n") // before any watch exists
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- WatchFiles(ctx, []string{path}, load, func(p *Policy) { applied.Store(p.String()) }, nil)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	eventually(t, 10*time.Second, "the change made before the watch", func() bool {
		s, _ := applied.Load().(string)
		return strings.Contains(s, "after.test")
	})
}
