// Package jsonl provides append-only JSON-lines files that stay intact when
// several goroutines and several processes append to them at once.
//
// Each Append marshals one value and writes it with a single write(2) on a
// file opened with O_APPEND, while holding a flock on a sibling lock file
// (path + ".lock"): shared for an append to the live file, exclusive to
// rotate (and to reopen after another process rotated). The lock is what
// makes size-based rotation safe: no write is in flight while a rotation
// renames and drops files, so a line whose Append returned nil is in the
// live file or the rotated one (or, past that, in path.kept if Keep keeps
// it), never in a file already dropped, however long its writer stalled
// between checking the file and writing. Appenders share the lock with
// each other and with readers, so only rotation serialises them. Under the
// lock the writer checks that its descriptor still refers to the file at
// path (another process may have rotated it) and reopens if not, and it
// re-checks the size before rotating, so two writers that both saw a full
// file rotate only once. A busy writer keeps its shared lock across the
// appends of up to 50 ms (a lease), so that most lines cost one write(2);
// a rotation waits for the leases to end (see appendFast).
//
// No lock is waited on for ever: a process stopped while it holds one
// (SIGSTOP, a debugger, a closed laptop lid) keeps it until it resumes. A
// rotation waits for the exclusive lock at most rotateWait (ten leases)
// and is otherwise given up for rotateRetry: the line is appended under
// the shared lock instead, so it is still never in a dropped file, and
// the log grows past MaxBytes until a later append rotates it. Every other
// wait (the shared lock, held exclusive only by a rotation) ends after
// LockWait with an error naming the holder (atomicfile.Flock).
//
// Every file is opened as a regular file only, without blocking
// (untrusted.OpenFile): a FIFO or a device in the log's place is an error
// naming the file, never a hang or an endless read.
//
// Rotation renames path to path.1 (replacing any older path.1): one generation
// is kept, so lines older than that are dropped on purpose, except the lines
// Options.Keep marks: before path.1 is replaced, its kept lines are moved to
// path.kept (rewritten atomically; Keep is asked again about every line there,
// so lines past their retention leave it). A flood of unimportant lines can
// thus rotate the log as often as it likes without erasing an important one.
//
// Torn lines. A short write (disk full, a file-size limit) must never leave a
// fragment that the next line glues onto. The writer terminates a fragment
// with a newline at once (O_APPEND puts it right after the fragment unless
// another process appended in between) and never truncates: a truncate could
// cut a line another process appended meanwhile without the lock. Readers
// recover a good line glued onto a fragment (the longest suffix that starts
// with '{' and is valid JSON), skip lines that are not JSON, and skip lines
// longer than the read cap instead of giving up, so no good line is lost
// because of a torn neighbour.
//
// Locking is Unix-only (flock); corral runs on macOS and Linux.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/core/atomicfile"
	"github.com/corral-dev/corral/core/untrusted"
)

// Options configures a Writer.
type Options struct {
	// MaxBytes rotates the file to path.1 before an append when its size is
	// at least MaxBytes. Zero or negative disables rotation.
	MaxBytes int64
	// Mode is the permission of newly created files; 0 means 0600.
	Mode os.FileMode
	// Keep, if set, is asked at rotation about every line of the generation
	// about to be dropped (and every line already in path.kept): lines it
	// keeps go to path.kept instead of being dropped. It is called under
	// the file lock with the time of the rotation.
	Keep func(line []byte, now time.Time) bool
	// KeepMaxBytes bounds path.kept; beyond it the oldest kept lines go.
	// Zero means 256 MiB. It is a disk safety net, not a retention rule.
	KeepMaxBytes int64
	// Schema, when set, is written as the first key of every line that is
	// a JSON object ({"schema":"corral.audit-event/v1",...}): a reader of
	// the file alone (a SIEM's shipper) knows what each line is. Readers
	// decode lines into structs without the key and ignore it.
	Schema string

	// beforeWrite, when set, runs just before each write(2), under the
	// lock: tests stall writers there to prove no rotation loses a line.
	beforeWrite func()
}

// Writer appends JSON lines to one file. It is safe for concurrent use by
// several goroutines; other processes may append to the same path with their
// own Writer.
type Writer struct {
	path string
	opt  Options

	mu   sync.Mutex
	f    *os.File // data file, O_APPEND; nil after Close
	lock *os.File // path + ".lock", flocked around each append

	fi   os.FileInfo // identity of f, cached for the fast path
	fiOf *os.File    // the *os.File fi describes

	// The lease (see appendFast): while leased, this writer holds the
	// shared lock and f is the file at path, which is size bytes long as
	// far as this writer knows.
	leased     bool
	size       int64
	leaseTimer *time.Timer

	// rotateAfter: a rotation given up (see appendLine) is not tried
	// again before this time; until then a full file grows.
	rotateAfter time.Time
}

// Deadlines of the lock (see appendLine). No lock is waited on for ever:
// a process stopped while it holds one (SIGSTOP, a debugger, a closed
// laptop lid) holds it until it is resumed.
const (
	// rotateWait bounds the wait for the exclusive lock a rotation
	// needs: ten leases, so every live writer's lease ends well within
	// it; a shared holder that keeps it longer is stopped, and the
	// rotation is given up (the line is appended without it).
	rotateWait = 10 * leaseFor
	// rotateRetry is how long a writer that gave up a rotation appends
	// to the full file before it tries again.
	rotateRetry = 5 * time.Second
	// LockWait bounds every other wait: for the shared lock (held
	// exclusive only by a rotation, for milliseconds unless its process
	// stopped), after which Append and ReadAll fail naming the holder.
	LockWait = 10 * time.Second
)

// leaseFor is how long a writer keeps the shared lock across its appends
// (see appendFast): the longest a rotation waits for a busy writer.
const leaseFor = 50 * time.Millisecond

// RotatedSuffix is appended to path to name the single rotated generation.
const RotatedSuffix = ".1"

// KeptSuffix names the file of lines Options.Keep saved from rotation. It is
// read before the rotated generation.
const KeptSuffix = ".kept"

// lockSuffix names the lock file beside path. A separate lock file is used
// because the data file is renamed by rotation and a lock on it would not
// exclude a writer that opened the new file.
const lockSuffix = ".lock"

// Open opens (creating if needed) the JSON-lines file at path for appending.
// The parent directory is created with mode 0700 if missing.
func Open(path string, opt Options) (*Writer, error) {
	if opt.Mode == 0 {
		opt.Mode = 0o600
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating directory for %s: %w", path, err)
	}
	lock, err := untrusted.OpenLock(path+lockSuffix, opt.Mode)
	if err != nil {
		return nil, fmt.Errorf("opening lock file for %s: %w", path, err)
	}
	f, err := openData(path, opt.Mode)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return &Writer{path: path, opt: opt, f: f, lock: lock}, nil
}

func openData(path string, mode os.FileMode) (*os.File, error) {
	f, err := untrusted.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, mode)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return f, nil
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("jsonl writer closed")

// Append marshals v as one JSON line and appends it. The line is written with
// one write(2) on an O_APPEND descriptor under the lock (see the package
// comment), so it is never torn or interleaved with another writer's line,
// and once Append returns nil no rotation can lose it.
func (w *Writer) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding line for %s: %w", w.path, err)
	}
	// json.Marshal never emits a raw newline, so the line is one line.
	return w.appendLine(append(w.withSchema(b), '\n'))
}

// withSchema puts Options.Schema first in the object b (a new slice), or
// returns b when there is no schema, b is no object, or it names one.
func (w *Writer) withSchema(b []byte) []byte {
	if w.opt.Schema == "" || len(b) < 2 || b[0] != '{' || bytes.HasPrefix(b, []byte(`{"schema":`)) {
		return b
	}
	head, _ := json.Marshal(map[string]string{"schema": w.opt.Schema})
	out := make([]byte, 0, len(head)+len(b)+1)
	out = append(out, head[:len(head)-1]...)
	if string(b) != "{}" {
		out = append(out, ',')
	}
	return append(out, b[1:]...)
}

// AppendEncoded appends line, one JSON value its caller encoded (valid
// JSON, as json.Marshal would write it), followed by a newline, as Append
// does; it spares a hot path marshalling the value a second time. A line
// with a raw newline or carriage return is refused, so that one call is
// never more than one line. line may be reused once it returns.
func (w *Writer) AppendEncoded(line []byte) error {
	if bytes.ContainsAny(line, "\n\r") || len(line) == 0 {
		return fmt.Errorf("appending to %s: an encoded line must be one non-empty line", w.path)
	}
	line = w.withSchema(line)
	b := make([]byte, len(line)+1)
	copy(b, line)
	b[len(line)] = '\n'
	return w.appendLine(b)
}

// appendLine appends b, one line with its newline.
func (w *Writer) appendLine(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("appending to %s: %w", w.path, ErrClosed)
	}
	if done, err := w.appendFast(b); done {
		return err
	}
	w.endLeaseLocked() // the exclusive lock replaces it, and is dropped after
	// The exclusive lock only when a rotation may be due, and for at most
	// rotateWait: a writer stopped while it holds the shared lock must not
	// stop every other writer. Without it, the line is appended under the
	// shared lock (no rotation can drop it) and the file grows past
	// MaxBytes until a later append rotates it.
	exclusive := false
	if w.opt.MaxBytes > 0 && !time.Now().Before(w.rotateAfter) {
		err := atomicfile.Flock(w.lock, w.path+lockSuffix, unix.LOCK_EX, rotateWait)
		if err != nil && !errors.Is(err, atomicfile.ErrLockTimeout) {
			return err
		}
		exclusive = err == nil
		if !exclusive {
			w.rotateAfter = time.Now().Add(rotateRetry)
		}
	}
	if !exclusive {
		if err := atomicfile.Flock(w.lock, w.path+lockSuffix, unix.LOCK_SH, LockWait); err != nil {
			return fmt.Errorf("appending to %s: %w", w.path, err)
		}
	}
	defer unflock(w.lock) //nolint:errcheck // closing the fd also unlocks

	size, err := w.current()
	if err != nil {
		return err
	}
	if exclusive && size >= w.opt.MaxBytes {
		if err := w.rotate(); err != nil {
			return err
		}
		size = 0
	}
	if w.opt.beforeWrite != nil {
		w.opt.beforeWrite()
	}
	n, err := w.f.Write(b)
	if err == nil && n != len(b) {
		err = fmt.Errorf("short write %d of %d bytes", n, len(b))
	}
	if err != nil {
		if n > 0 {
			w.terminate()
		}
		return fmt.Errorf("appending to %s: %w", w.path, err)
	}
	return nil
}

// terminate ends a fragment left by a short write with a newline, so that
// the next line starts a line of its own (see the package comment: no
// truncation). Best effort: if it fails too, readers recover the next line.
func (w *Writer) terminate() {
	w.f.Write([]byte{'\n'}) //nolint:errcheck
}

// current makes w.f refer to the file now at w.path (another process may
// have rotated it since we opened it) and returns its size. Caller holds the
// lock.
func (w *Writer) current() (int64, error) {
	have, err := w.f.Stat()
	if err != nil {
		return 0, fmt.Errorf("checking %s: %w", w.path, err)
	}
	now, err := os.Stat(w.path)
	if err == nil && os.SameFile(have, now) {
		return have.Size(), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("checking %s: %w", w.path, err)
	}
	f, err := openData(w.path, w.opt.Mode)
	if err != nil {
		return 0, err
	}
	w.f.Close()
	w.f = f
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("checking %s: %w", w.path, err)
	}
	return st.Size(), nil
}

// rotate renames path to path.1 and opens a fresh path. Caller holds the lock.
// With Options.Keep, the kept lines of the old path.1 move to path.kept
// first; if that fails the rotation does not happen (the log grows past
// MaxBytes rather than lose a kept line).
func (w *Writer) rotate() error {
	if w.opt.Keep != nil {
		if err := w.saveKept(); err != nil {
			return fmt.Errorf("rotating %s: keeping lines: %w", w.path, err)
		}
	}
	if err := os.Rename(w.path, w.path+RotatedSuffix); err != nil {
		return fmt.Errorf("rotating %s: %w", w.path, err)
	}
	f, err := openData(w.path, w.opt.Mode)
	if err != nil {
		return err
	}
	w.f.Close()
	w.f = f
	return nil
}

// saveKept rewrites path.kept as the lines of path.kept and path.1 (in that
// order) that Keep keeps, capped at KeepMaxBytes from the newest end.
// Caller holds the lock.
func (w *Writer) saveKept() error {
	now := time.Now()
	kept := w.path + KeptSuffix
	var lines [][]byte
	var total int64
	for _, p := range []string{kept, w.path + RotatedSuffix} {
		f, err := untrusted.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = readFile(f, func(line []byte) error {
			if w.opt.Keep(line, now) {
				l := append(bytes.Clone(line), '\n')
				lines = append(lines, l)
				total += int64(len(l))
			}
			return nil
		})
		f.Close()
		if err != nil {
			return err
		}
	}
	limit := w.opt.KeepMaxBytes
	if limit <= 0 {
		limit = 256 << 20
	}
	for total > limit && len(lines) > 0 {
		total -= int64(len(lines[0]))
		lines = lines[1:]
	}
	if len(lines) == 0 {
		if err := os.Remove(kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(w.path), filepath.Base(kept)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename
	bw := bufio.NewWriter(tmp)
	for _, l := range lines {
		bw.Write(l) //nolint:errcheck // surfaces at Flush
	}
	err = errors.Join(bw.Flush(), tmp.Chmod(w.opt.Mode), tmp.Sync(), tmp.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), kept)
}

// Close closes the file. Further appends return ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	w.endLeaseLocked()
	err := errors.Join(w.f.Close(), w.lock.Close())
	w.f, w.lock = nil, nil
	if err != nil {
		return fmt.Errorf("closing %s: %w", w.path, err)
	}
	return nil
}

// Path returns the file's path.
func (w *Writer) Path() string { return w.path }

// unflock drops the lock held on f. Locks are taken with a deadline
// (atomicfile.Flock), never with a blocking flock.
func unflock(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_UN)
		if err != unix.EINTR {
			return err
		}
	}
}

// maxLine bounds a single line when reading; longer lines are an error.
const maxLine = 16 << 20

// ReadAll calls fn for each non-empty line of path.kept, path.1 and then
// path, oldest first. Missing files are skipped. The slice passed to fn is only valid
// during the call. If fn returns an error, ReadAll stops and returns it.
//
// Both files are opened under a shared lock, so a concurrent rotation cannot
// make ReadAll skip or repeat a generation; the lock is released before fn is
// called, so a slow reader never blocks writers. A line appended while
// reading is seen whole or not at all, because appends are single writes; a
// trailing line without a newline (which a writer never leaves) is skipped.
func ReadAll(path string, fn func(line []byte) error) error {
	return readGenerations(path, Generations(path), fn)
}

// ReadOlder is ReadAll without the live file: the kept lines and the
// rotated generation, for a reader that goes on with Tail(path, 0).
func ReadOlder(path string, fn func(line []byte) error) error {
	g := Generations(path)
	return readGenerations(path, g[:len(g)-1], fn)
}

func readGenerations(path string, gens []string, fn func(line []byte) error) error {
	files, err := openGenerations(path, gens)
	if err != nil {
		return err
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, f := range files {
		if err := readFile(f, fn); err != nil {
			return err
		}
	}
	return nil
}

// Generations are the files of the log at path, oldest first: the lines
// kept from rotation, the rotated generation, the current file.
func Generations(path string) []string {
	return []string{path + KeptSuffix, path + RotatedSuffix, path}
}

// openGenerations opens path.kept, path.1 and path, whichever exist, under
// a shared lock when a lock file exists. Each must be a regular file.
func openGenerations(path string, gens []string) ([]*os.File, error) {
	if lock, err := untrusted.Open(path + lockSuffix); err == nil {
		defer lock.Close()
		if err := atomicfile.Flock(lock, path+lockSuffix, unix.LOCK_SH, LockWait); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		defer unflock(lock) //nolint:errcheck // closing the fd also unlocks
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var files []*os.File
	for _, p := range gens {
		f, err := untrusted.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			for _, f := range files {
				f.Close()
			}
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		files = append(files, f)
	}
	return files, nil
}

func readFile(f *os.File, fn func(line []byte) error) error {
	path := f.Name()
	r := bufio.NewReaderSize(f, 64<<10)
	var long []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if tooLong {
				continue
			}
			long = append(long, chunk...)
			if len(long) > maxLine {
				// Skip it to its newline: one bad line must not
				// hide the good lines after it.
				tooLong, long = true, nil
			}
			continue
		}
		if err != nil {
			// io.EOF: a partial final line is skipped (see ReadAll).
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading %s: %w", path, err)
		}
		if tooLong {
			tooLong = false
			continue
		}
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > maxLine+2 { // +2: the line end
			long = nil
			continue
		}
		line = Recover(bytes.TrimRight(line, "\r\n"))
		if len(line) > 0 {
			if err := fn(line); err != nil {
				return err
			}
		}
		long = nil
	}
}

// maxRecover bounds the lines Recover searches (quadratic in the worst case);
// corral's own lines are far shorter.
const maxRecover = 1 << 20

// Recover returns line if it is valid JSON, else the longest suffix of it
// that starts with '{' and is valid JSON (a good line glued onto the
// fragment of a torn write), else nil.
func Recover(line []byte) []byte {
	if json.Valid(line) {
		return line
	}
	if len(line) > maxRecover {
		return nil
	}
	for i := 1; i < len(line); i++ {
		j := bytes.IndexByte(line[i:], '{')
		if j < 0 {
			break
		}
		i += j
		if json.Valid(line[i:]) {
			return line[i:]
		}
	}
	return nil
}

// appendFast writes a line under the shared lock when the line does not
// reach MaxBytes. O_APPEND places the line whole after every earlier one
// whatever other processes do, and the shared lock keeps rotation
// (exclusive) out between the check of the file and the write: without it,
// a writer stalled there across two rotations wrote into a file already
// dropped, and its line was lost although Append returned nil. A rotation
// due, or an error, takes the exclusive path. Caller holds mu.
//
// The shared lock is leased: taken, and the file checked, by the first
// append, then kept for the appends of the next leaseFor, which are one
// write(2) each instead of flock, stat, write and unlock. While any writer
// holds it no rotation can happen, so the file checked at the start of the
// lease stays the one at path. The size this writer knows is short by what
// other processes appended meanwhile; it is read again at every lease, so
// when the file is full every writer sees it within leaseFor, stops
// leasing and queues for the exclusive lock: a rotation waits at most
// about one lease, and a rotation can come up to one lease late. A timer
// ends the lease, so an idle writer never keeps the lock.
func (w *Writer) appendFast(b []byte) (bool, error) {
	if !w.leased && !w.beginLeaseLocked() {
		return false, nil
	}
	if w.opt.MaxBytes > 0 && w.size+int64(len(b)) >= w.opt.MaxBytes && !time.Now().Before(w.rotateAfter) {
		return false, nil
	}
	if w.opt.beforeWrite != nil {
		w.opt.beforeWrite()
	}
	n, err := w.f.Write(b)
	w.size += int64(n)
	if err == nil && n == len(b) {
		return true, nil
	}
	if err == nil {
		err = fmt.Errorf("short write %d of %d bytes", n, len(b))
	}
	if n > 0 {
		w.terminate()
	}
	return true, fmt.Errorf("appending to %s: %w", w.path, err)
}

// beginLeaseLocked takes the shared lock, makes f the file at path
// (another process may have rotated it: under the shared lock nobody can
// again until it is dropped), reads its size, and arms the timer that
// ends the lease. It reports whether all of that succeeded; if not, the
// lock is not held. Caller holds mu.
func (w *Writer) beginLeaseLocked() bool {
	// One try: the lock is exclusive only during a rotation, and the slow
	// path waits for that with a deadline.
	if err := unix.Flock(int(w.lock.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return false
	}
	ok := false
	defer func() {
		if !ok {
			unflock(w.lock) //nolint:errcheck // closing the fd also unlocks
		}
	}()
	now, err := os.Stat(w.path)
	if err != nil {
		return false
	}
	if w.fiOf != w.f {
		fi, err := w.f.Stat()
		if err != nil {
			return false
		}
		w.fi, w.fiOf = fi, w.f
	}
	if !os.SameFile(w.fi, now) {
		f, err := openData(w.path, w.opt.Mode)
		if err != nil {
			return false
		}
		fi, err := f.Stat()
		if err != nil || !os.SameFile(fi, now) {
			f.Close()
			return false
		}
		w.f.Close()
		w.f, w.fi, w.fiOf = f, fi, f
	}
	w.size = now.Size()
	w.leased, ok = true, true
	if w.leaseTimer == nil {
		w.leaseTimer = time.AfterFunc(leaseFor, w.leaseRanOut)
	} else {
		w.leaseTimer.Reset(leaseFor)
	}
	return true
}

// leaseRanOut ends the lease when its time is up.
func (w *Writer) leaseRanOut() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.endLeaseLocked()
}

// endLeaseLocked drops the leased lock, if held. Caller holds mu.
func (w *Writer) endLeaseLocked() {
	if !w.leased {
		return
	}
	w.leased = false
	if w.leaseTimer != nil {
		w.leaseTimer.Stop()
	}
	unflock(w.lock) //nolint:errcheck // closing the fd also unlocks
}

// Tail calls fn for each line of path from byte offset from on (0: every
// line already there), then for each line appended, polling every poll
// until ctx ends (then it returns nil). A rotation (the file replaced or
// shorter than the offset) starts again at the new file's beginning; a
// partial last line waits for its newline. Lines longer than maxLine are
// skipped.
func Tail(ctx context.Context, path string, from int64, poll time.Duration, fn func(line []byte) error) error {
	off, id := from, ""
	for {
		if err := tailOnce(path, &off, &id, fn); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
	}
}

// tailOnce reads what path holds past *off and moves *off to the end of
// its last whole line; *id tells a replaced file from the one read before.
func tailOnce(path string, off *int64, id *string, fn func(line []byte) error) error {
	f, err := untrusted.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("following %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("following %s: %w", path, err)
	}
	cur := fileID(st)
	if (*id != "" && cur != *id) || st.Size() < *off {
		*off = 0
	}
	*id = cur
	if st.Size() == *off {
		return nil
	}
	if _, err := f.Seek(*off, io.SeekStart); err != nil {
		return fmt.Errorf("following %s: %w", path, err)
	}
	// At most maxTailRead per poll: a file grown past it is read on in
	// the next polls.
	buf, err := io.ReadAll(io.LimitReader(f, min(st.Size()-*off, maxTailRead)))
	if err != nil {
		return fmt.Errorf("following %s: %w", path, err)
	}
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		if len(buf) > maxLine {
			*off += int64(len(buf)) // a line past the cap: skip it
		}
		return nil
	}
	*off += int64(end + 1)
	for _, line := range bytes.Split(buf[:end], []byte{'\n'}) {
		line = Recover(bytes.TrimRight(line, "\r"))
		if len(line) == 0 || len(line) > maxLine {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	return nil
}

// maxTailRead bounds what one poll of Tail reads (more than a line's cap).
const maxTailRead = maxLine + 4<<20

// fileID identifies the file st describes (device and inode).
func fileID(st os.FileInfo) string {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprintf("%d:%d", s.Dev, s.Ino)
	}
	return ""
}
