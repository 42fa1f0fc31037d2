//go:build linux

package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func readAny(t *testing.T, path string) []rec {
	t.Helper()
	var out []rec
	if err := ReadAll(path, func(l []byte) error {
		var r rec
		if err := json.Unmarshal(l, &r); err != nil {
			return fmt.Errorf("line %.200q: %w", l, err)
		}
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// shortWriteEnv makes the test binary a writer that hits a file-size limit
// mid-line: "path|maxBytes". It runs in a child process because
// RLIMIT_FSIZE applies to every file the process writes.
const shortWriteEnv = "CORRAL_JSONL_TEST_SHORT_WRITE"

func runShortWriter(spec string) error {
	path, mb, _ := strings.Cut(spec, "|")
	var maxBytes int64
	fmt.Sscan(mb, &maxBytes)       //nolint:errcheck
	signal.Ignore(syscall.SIGXFSZ) // the write fails with EFBIG instead
	w, err := Open(path, Options{MaxBytes: maxBytes})
	if err != nil {
		return err
	}
	defer w.Close()
	for i := range 10 {
		if err := w.Append(rec{I: i, Pad: strings.Repeat("p", 100)}); err != nil {
			return err
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_FSIZE, &old); err != nil {
		return err
	}
	lim := old
	lim.Cur = uint64(st.Size()) + 50 // room for half a line
	if err := unix.Setrlimit(unix.RLIMIT_FSIZE, &lim); err != nil {
		return err
	}
	err = w.Append(rec{I: 100, Pad: strings.Repeat("t", 100)})
	if rerr := unix.Setrlimit(unix.RLIMIT_FSIZE, &old); rerr != nil {
		return rerr
	}
	if err == nil {
		return fmt.Errorf("append past RLIMIT_FSIZE succeeded")
	}
	for i := 10; i < 200; i++ { // enough to rotate when maxBytes is set
		if err := w.Append(rec{I: i, Pad: strings.Repeat("p", 100)}); err != nil {
			return err
		}
	}
	return nil
}

// A short write (here: RLIMIT_FSIZE, as a full disk would) leaves a
// fragment; the next good line must not be lost by gluing onto it, with and
// without rotation.
func TestShortWriteNeverGlues(t *testing.T) {
	for _, maxBytes := range []int64{0, 4096} {
		t.Run(fmt.Sprint("maxBytes=", maxBytes), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.jsonl")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d", shortWriteEnv, path, maxBytes))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("writer: %v\n%s", err, out)
			}
			var want []int
			for i := range 200 {
				want = append(want, i)
			}
			var gotI []int
			for _, r := range readAny(t, path) {
				gotI = append(gotI, r.I)
			}
			if maxBytes > 0 { // one generation: the oldest lines are gone on purpose
				want = want[len(want)-len(gotI):]
			}
			if fmt.Sprint(gotI) != fmt.Sprint(want) {
				t.Fatalf("read %v\nwant %v", gotI, want)
			}
			raw, _ := os.ReadFile(path)
			if maxBytes == 0 && !bytes.Contains(raw, []byte("tttt")) {
				t.Fatal("no fragment in the file: the limit did not cut the line")
			}
		})
	}
}

// A reader recovers a good line glued onto a torn fragment, and skips
// garbage and overlong lines without losing the lines after them.
func TestReaderSurvivesTornNeighbours(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	var b bytes.Buffer
	b.WriteString(`{"w":1,"i":1,"pad":""}` + "\n")
	b.WriteString(`{"w":1,"i":2,"pa`)                                 // torn
	b.WriteString(`{"w":1,"i":3,"pad":"{x"}` + "\n")                  // glued onto it
	b.WriteString("garbage \x00\xff\n")                               // not JSON
	b.WriteString(`{"w":1,"i":4,"pad":"{`)                            // torn inside a string holding '{'
	b.WriteString(`{"w":1,"i":5,"pad":"ok"}` + "\n")                  // glued
	b.WriteString(`"` + strings.Repeat("z", maxLine+10) + `"` + "\n") // overlong
	b.WriteString(`{"w":1,"i":6,"pad":""}` + "\n")
	b.WriteString(`{"w":1,"i":7`) // trailing partial
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range readAny(t, path) {
		got = append(got, r.I)
	}
	if fmt.Sprint(got) != "[1 3 5 6]" {
		t.Fatalf("read %v, want [1 3 5 6]", got)
	}
}

// Lines Keep marks survive any number of rotations; the others rotate out.
func TestKeepSurvivesFlood(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	keep := func(line []byte, now time.Time) bool { return bytes.Contains(line, []byte(`"w":1`)) }
	w, err := Open(path, Options{MaxBytes: 2048, Keep: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 20 {
		if err := w.Append(rec{W: 1, I: i}); err != nil { // important
			t.Fatal(err)
		}
		for j := range 100 { // flood
			if err := w.Append(rec{W: 2, I: i*1000 + j, Pad: strings.Repeat("f", 50)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	var important []int
	flood := 0
	for _, r := range readAny(t, path) {
		if r.W == 1 {
			important = append(important, r.I)
		} else {
			flood++
		}
	}
	want := fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19})
	if fmt.Sprint(important) != want {
		t.Fatalf("important lines %v, want %v", important, want)
	}
	if flood > 100 {
		t.Fatalf("%d flood lines kept; rotation should have dropped most", flood)
	}
	// Keep is asked again: a line it no longer keeps leaves path.kept.
	w.opt.Keep = func([]byte, time.Time) bool { return false }
	for j := range 200 {
		if err := w.Append(rec{W: 2, I: j, Pad: strings.Repeat("f", 50)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range readAny(t, path) {
		if r.W == 1 {
			t.Fatalf("line %v still kept after Keep dropped it", r)
		}
	}
}

func FuzzRecover(f *testing.F) {
	f.Add([]byte(`{"a":1}`), []byte(`{"b":"{"}`))
	f.Add([]byte(`{"a":"{`), []byte(`{"b":2}`))
	f.Add([]byte(`{{{{`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, frag, good []byte) {
		if !json.Valid(good) || len(good) == 0 || good[0] != '{' {
			return
		}
		var obj map[string]any
		if json.Unmarshal(good, &obj) != nil {
			return
		}
		// frag is a strict prefix of some JSON line: cut a valid object.
		if !json.Valid(frag) && bytes.IndexByte(frag, '\n') < 0 {
			got := Recover(append(bytes.Clone(frag), good...))
			if got == nil {
				t.Fatalf("Recover(%q + %q) = nil", frag, good)
			}
			if !json.Valid(got) {
				t.Fatalf("Recover returned invalid %q", got)
			}
		}
	})
}
