package jsonl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tryExclusive reports whether the lock of path can be taken exclusive
// now, through a descriptor of its own (as another process would), and
// drops it at once.
func tryExclusive(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path + lockSuffix)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck
	return true
}

// A writer keeps the shared lock across a burst of appends (the lease)
// and drops it within leaseFor of going idle, so that a rotation elsewhere
// is never blocked by an idle writer; Close drops it at once.
func TestLeaseEndsWhenIdle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Append("one"); err != nil {
		t.Fatal(err)
	}
	if tryExclusive(t, path) {
		t.Fatal("no shared lock held right after an append")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !tryExclusive(t, path) {
		if time.Now().After(deadline) {
			t.Fatal("the lease was not dropped within 10 s of the last append")
		}
		time.Sleep(leaseFor / 5)
	}
	if err := w.Append("two"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !tryExclusive(t, path) {
		t.Fatal("lock still held after Close")
	}
}

// A busy writer whose lease is running does not keep a rotation in
// another writer (another descriptor, as in another process) waiting for
// longer than about a lease, and the lines of both survive it whole.
func TestLeaseLetsRotationIn(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	busy, err := Open(path, Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	other, err := Open(path, Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stop := make(chan struct{})
	done := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if err := busy.Append(rec{W: 0, I: n, Pad: strings.Repeat("x", n%200)}); err != nil {
				t.Error(err)
			}
			n++
		}
	}()
	// Fill the file past MaxBytes through the other writer: its next
	// append must rotate, under the exclusive lock.
	i := 0
	start := time.Now()
	var longest time.Duration
	for {
		t0 := time.Now()
		if err := other.Append(rec{W: 1, I: i, Pad: strings.Repeat("x", (7+i)%200)}); err != nil {
			t.Fatal(err)
		}
		longest = max(longest, time.Since(t0))
		i++
		if _, err := os.Stat(path + RotatedSuffix); err == nil {
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatal("no rotation within 20 s")
		}
	}
	close(stop)
	n := <-done
	t.Logf("rotated after %v, %d lines of the other writer, %d of the busy one; longest append %v", time.Since(start), i, n, longest)
	// About one lease; the bound is generous for a loaded machine.
	if longest > 5*time.Second {
		t.Errorf("an append waited %v for the rotation", longest)
	}
	got := readRecs(t, path)
	seen := map[[2]int]bool{}
	for _, r := range got {
		seen[[2]int{r.W, r.I}] = true
	}
	// Rotation keeps one generation: the newest lines of each are there.
	if !seen[[2]int{1, i - 1}] || !seen[[2]int{0, n - 1}] {
		t.Errorf("the last lines are missing: other %d (%v), busy %d (%v)", i-1, seen[[2]int{1, i - 1}], n-1, seen[[2]int{0, n - 1}])
	}
}

// AppendEncoded writes the caller's encoding as one line, and refuses
// anything that would not be one line.
func TestAppendEncoded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	line := []byte(`{"w":3,"i":4,"pad":""}`)
	if err := w.AppendEncoded(line); err != nil {
		t.Fatal(err)
	}
	line[2] = 'X' // the caller may reuse it
	for _, bad := range []string{"", "{}\n{}", "{}\r", "\n"} {
		if err := w.AppendEncoded([]byte(bad)); err == nil {
			t.Errorf("AppendEncoded(%q) accepted", bad)
		}
	}
	if err := w.Append(rec{W: 5}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"w":3,"i":4,"pad":""}` + "\n" + `{"w":5,"i":0,"pad":""}` + "\n"; string(b) != want {
		t.Errorf("file %q, want %q", b, want)
	}
}
