package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/core/untrusted"
)

// writerEnv makes the test binary act as one writer process:
// "path|id|lines|maxBytes".
const writerEnv = "CORRAL_JSONL_TEST_WRITER"

type rec struct {
	W   int    `json:"w"`
	I   int    `json:"i"`
	Pad string `json:"pad"`
}

func TestMain(m *testing.M) {
	if spec := os.Getenv(shortWriteEnv); spec != "" {
		if err := runShortWriter(spec); err != nil {
			fmt.Fprintln(os.Stderr, "short writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(writerEnv); spec != "" {
		if err := runWriter(spec); err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if spec := os.Getenv(stoppedEnv); spec != "" {
		if err := runStopped(spec); err != nil {
			fmt.Fprintln(os.Stderr, "stopped writer:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runWriter(spec string) error {
	parts := strings.Split(spec, "|")
	if len(parts) != 4 && len(parts) != 6 {
		return fmt.Errorf("bad spec %q", spec)
	}
	id, _ := strconv.Atoi(parts[1])
	n, _ := strconv.Atoi(parts[2])
	maxBytes, _ := strconv.ParseInt(parts[3], 10, 64)
	opt := Options{MaxBytes: maxBytes}
	if len(parts) == 6 { // "|stallEvery|stall": keep every line, stall writes
		every, _ := strconv.Atoi(parts[4])
		stall, _ := time.ParseDuration(parts[5])
		opt.Keep = keepAll
		opt.beforeWrite = stallEvery(every, stall)
	}
	w, err := Open(parts[0], opt)
	if err != nil {
		return err
	}
	// Vary line lengths so torn or interleaved writes would show up.
	for i := range n {
		if err := w.Append(rec{W: id, I: i, Pad: strings.Repeat("x", (id*7+i)%200)}); err != nil {
			return err
		}
	}
	return w.Close()
}

func keepAll([]byte, time.Time) bool { return true }

// stallEvery returns a beforeWrite hook that sleeps for d before every
// every-th write: a writer descheduled between its check and its write.
func stallEvery(every int, d time.Duration) func() {
	var n atomic.Int64
	return func() {
		if n.Add(1)%int64(every) == 0 {
			time.Sleep(d)
		}
	}
}

// runWriters starts procs writer processes and waits for them all.
func runWriters(t *testing.T, path string, procs, lines int, maxBytes int64) {
	t.Helper()
	runWritersSpec(t, path, procs, lines, strconv.FormatInt(maxBytes, 10))
}

// runWritersSpec is runWriters with the spec's tail after "lines|".
func runWritersSpec(t *testing.T, path string, procs, lines int, tail string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*exec.Cmd
	for id := range procs {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%s", writerEnv, path, id, lines, tail))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer %v: %v", cmd.Args, err)
		}
	}
}

// readRecs reads both generations, failing on any line that does not parse.
func readRecs(t *testing.T, path string) []rec {
	t.Helper()
	var out []rec
	err := ReadAll(path, func(line []byte) error {
		var r rec
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("line %q: %w", line, err)
		}
		if len(r.Pad) != (r.W*7+r.I)%200 {
			return fmt.Errorf("line %q: pad length %d", line, len(r.Pad))
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMultiProcessNoLoss(t *testing.T) {
	const procs, lines = 6, 400
	path := filepath.Join(t.TempDir(), "logs", "x.jsonl")
	runWriters(t, path, procs, lines, 1<<40)

	got := readRecs(t, path)
	if len(got) != procs*lines {
		t.Fatalf("read %d lines, want %d", len(got), procs*lines)
	}
	next := make([]int, procs)
	for _, r := range got {
		if r.I != next[r.W] {
			t.Fatalf("writer %d: line %d out of order, want %d", r.W, r.I, next[r.W])
		}
		next[r.W]++
	}
	if _, err := os.Stat(path + RotatedSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unexpected rotation: %v", err)
	}
}

func TestMultiProcessRotation(t *testing.T) {
	const procs, lines = 6, 400
	const maxBytes = 8 << 10
	path := filepath.Join(t.TempDir(), "x.jsonl")

	// Read while the writers rotate: every snapshot must parse and hold a
	// gap-free run per writer (no generation skipped or read twice).
	stop := make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		reads := 0
		for {
			select {
			case <-stop:
				if reads == 0 {
					readErr <- errors.New("no concurrent reads happened")
				}
				close(readErr)
				return
			default:
			}
			last := map[int]int{}
			err := ReadAll(path, func(line []byte) error {
				var r rec
				if err := json.Unmarshal(line, &r); err != nil {
					return fmt.Errorf("line %q: %w", line, err)
				}
				if l, ok := last[r.W]; ok && r.I != l+1 {
					return fmt.Errorf("writer %d: line %d follows %d", r.W, r.I, l)
				}
				last[r.W] = r.I
				return nil
			})
			if err != nil {
				readErr <- err
				close(readErr)
				return
			}
			reads++
		}
	}()
	runWriters(t, path, procs, lines, maxBytes)
	close(stop)
	if err := <-readErr; err != nil {
		t.Errorf("concurrent read: %v", err)
	}

	got := readRecs(t, path)
	if len(got) == 0 || len(got) >= procs*lines {
		t.Fatalf("read %d lines; want some, and fewer than %d since rotation drops old generations", len(got), procs*lines)
	}
	// Rotation drops the oldest lines only, so each writer's surviving lines
	// are a gap-free run ending at its last line, in order.
	first := map[int]int{}
	last := map[int]int{}
	for _, r := range got {
		if l, ok := last[r.W]; ok && r.I != l+1 {
			t.Fatalf("writer %d: line %d follows %d", r.W, r.I, l)
		}
		if _, ok := first[r.W]; !ok {
			first[r.W] = r.I
		}
		last[r.W] = r.I
	}
	for w, l := range last {
		if l != lines-1 {
			t.Errorf("writer %d: last line %d, want %d", w, l, lines-1)
		}
	}
	// The rotated file was at least MaxBytes when it was rotated; the live
	// file is below MaxBytes plus one line.
	old, err := os.Stat(path + RotatedSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if old.Size() < maxBytes {
		t.Errorf("%s is %d bytes, want >= %d", path+RotatedSuffix, old.Size(), maxBytes)
	}
	cur, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if cur.Size() >= maxBytes+300 {
		t.Errorf("%s is %d bytes, want < %d", path, cur.Size(), maxBytes+300)
	}
}

func TestGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := Open(path, Options{MaxBytes: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var wg sync.WaitGroup
	for id := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if err := w.Append(rec{W: id, I: i, Pad: strings.Repeat("x", (id*7+i)%200)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := readRecs(t, path); len(got) != 8*200 {
		t.Fatalf("read %d lines, want %d", len(got), 8*200)
	}
}

func TestRotationKeepsOneGeneration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	w, err := Open(path, Options{MaxBytes: 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		// Each line is 21 bytes, so every append after the first rotates.
		if err := w.Append(map[string]string{"k": fmt.Sprintf("%011d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := ReadAll(path, func(l []byte) error { lines = append(lines, string(l)); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"k":"00000000003"}`, `{"k":"00000000004"}`}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("lines = %q, want %q", lines, want)
	}
}

func TestModesAndClose(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "x.jsonl")
	w, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Append("hi"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Append("again"); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close: %v, want ErrClosed", err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", st.Mode().Perm())
	}
	st, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("file mode %v, want 0600", st.Mode().Perm())
	}
}

func TestReadAll(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.jsonl")
	long := strings.Repeat("y", 200<<10) // longer than the read buffer
	if err := os.WriteFile(path+RotatedSuffix, []byte("\"a\"\n\n\"b\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("\""+long+"\"\n\"partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := ReadAll(path, func(l []byte) error {
		var s string
		if err := json.Unmarshal(l, &s); err != nil {
			return err
		}
		got = append(got, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != long {
		t.Errorf("got %d lines %.20q", len(got), got)
	}
	if err := ReadAll(filepath.Join(dir, "missing"), func([]byte) error { return errors.New("called") }); err != nil {
		t.Errorf("missing file: %v", err)
	}
	stop := errors.New("stop")
	if err := ReadAll(path, func([]byte) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("fn error: %v, want stop", err)
	}
}

func BenchmarkAppend(b *testing.B) {
	w, err := Open(filepath.Join(b.TempDir(), "x.jsonl"), Options{MaxBytes: 16 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	ev := map[string]any{"time": "2026-01-01T00:00:00Z", "kind": "start", "box": "demo"}
	for b.Loop() {
		if err := w.Append(ev); err != nil {
			b.Fatal(err)
		}
	}
}

// checkAll fails unless got holds every line of procs writers of lines
// lines exactly once.
func checkAll(t *testing.T, got []rec, procs, lines int) {
	t.Helper()
	seen := map[[2]int]int{}
	for _, r := range got {
		seen[[2]int{r.W, r.I}]++
	}
	lost, twice := 0, 0
	for w := range procs {
		for i := range lines {
			switch seen[[2]int{w, i}] {
			case 0:
				lost++
			case 1:
			default:
				twice++
			}
		}
	}
	if lost > 0 || twice > 0 || len(got) != procs*lines {
		t.Fatalf("%d lines read of %d: %d lost, %d more than once", len(got), procs*lines, lost, twice)
	}
}

// A line whose Append returned nil is never lost to rotation: with a tiny
// MaxBytes (a rotation every few lines), every line kept, and writers that
// stall between checking the file and writing (where a writer on a
// lock-free path could sleep through two rotations and write into a file
// already dropped), all lines of all writers are there, once each. In one
// process and across processes.
func TestStalledWritersLoseNothing(t *testing.T) {
	const maxBytes = 1 << 10
	t.Run("goroutines", func(t *testing.T) {
		const writers, lines = 6, 300
		path := filepath.Join(t.TempDir(), "x.jsonl")
		var wg sync.WaitGroup
		for id := range writers {
			// One Writer each: a Writer's mutex would serialise the stall.
			w, err := Open(path, Options{MaxBytes: maxBytes, Keep: keepAll, beforeWrite: stallEvery(7, 3*time.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			wg.Go(func() {
				for i := range lines {
					if err := w.Append(rec{W: id, I: i, Pad: strings.Repeat("x", (id*7+i)%200)}); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		checkAll(t, readRecs(t, path), writers, lines)
	})
	t.Run("processes", func(t *testing.T) {
		const procs, lines = 4, 300
		path := filepath.Join(t.TempDir(), "x.jsonl")
		runWritersSpec(t, path, procs, lines, fmt.Sprintf("%d|%d|%s", maxBytes, 7, 3*time.Millisecond))
		checkAll(t, readRecs(t, path), procs, lines)
	})
}

// A special file in place of the log, its lock or a generation is an
// error naming it, at once: never a blocked open or an endless read.
func TestSpecialFilesRefused(t *testing.T) {
	for _, which := range []string{"", lockSuffix, RotatedSuffix, KeptSuffix} {
		for _, kind := range []string{"fifo", "dev zero", "directory"} {
			t.Run(which+" "+kind, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.jsonl")
				p := path + which
				var err error
				switch kind {
				case "fifo":
					err = syscall.Mkfifo(p, 0o600)
				case "dev zero":
					err = os.Symlink("/dev/zero", p)
				case "directory":
					err = os.Mkdir(p, 0o700)
				}
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 2)
				go func() {
					w, err := Open(path, Options{MaxBytes: 1})
					if err == nil {
						// Two appends: the second rotates, reading path.1 and path.kept.
						err = errors.Join(w.Append("a"), w.Append("b"), w.Close())
					}
					done <- err
				}()
				go func() { done <- ReadAll(path, func([]byte) error { return nil }) }()
				for range 2 {
					select {
					case err := <-done:
						// A directory at path.1 fails the rename of the rotation instead.
						if err != nil && (!errors.Is(err, untrusted.ErrNotRegular) && kind != "directory" || !strings.Contains(err.Error(), p)) {
							t.Errorf("error %v, want one naming %s as not a regular file", err, p)
						}
					case <-time.After(10 * time.Second):
						t.Fatal("blocked")
					}
				}
			})
		}
	}
}
