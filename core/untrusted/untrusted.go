// Package untrusted reads files that a box or a repository can write.
//
// Everything under a project directory is box-writable at any moment: a
// file corral reads there may have been replaced by a symlink to /dev/zero
// (reading it never ends), a FIFO (opening it blocks until a writer comes)
// or something far larger than any real config. ReadFile refuses all of
// these before a parser sees a byte. The check is made on the opened file
// descriptor, so swapping the file between a check and the read (TOCTOU)
// gains nothing: what is read is what was checked.
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is returned for anything but a regular file (after
// following symlinks): devices, FIFOs, sockets, directories.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is returned for a file larger than the caller's limit.
var ErrTooLarge = errors.New("file too large")

// ReadFile reads the regular file at path (following symlinks), at most
// limit bytes. A missing file returns an error that wraps fs.ErrNotExist.
//
// Order matters: a stat refuses special files before open (opening some
// devices has side effects); open uses O_NONBLOCK so that a FIFO swapped in
// after the stat cannot block; fstat of the opened descriptor is the check
// that counts; the read is bounded whatever the file claims its size is.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, _, err := open(path, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, &FileError{Path: path, What: fmt.Sprintf("larger than %d bytes", limit), Err: ErrTooLarge}
	}
	return b, nil
}

// Open opens the regular file at path (following symlinks) for reading,
// with ReadFile's checks and their order but no size limit: for streams
// the caller reads with caps of its own (JSON-lines logs, read line by
// line with a line cap). A missing file returns an error that wraps
// fs.ErrNotExist.
func Open(path string) (*os.File, error) {
	f, _, err := open(path, -1)
	return f, err
}

// OpenFile is os.OpenFile for a file that must be a regular file: corral's
// own logs, lock files and state it appends to. It refuses a FIFO, a
// device, a socket or a directory (following symlinks) without blocking
// and without the side effects of opening a device: a stat first, then
// the open with O_NONBLOCK (so a FIFO swapped in meanwhile cannot block
// it; on a regular file the flag changes nothing), then the fstat of the
// opened descriptor, which is the check that counts. flag is os.OpenFile's
// (O_CREATE included: a missing file is created as a regular file).
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil {
		if err := check(path, fi, -1); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) || flag&os.O_CREATE == 0 {
		return nil, err
	}
	f, err := os.OpenFile(path, flag|syscall.O_NONBLOCK|syscall.O_NOCTTY, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, fi, -1)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// open opens path for reading after the checks, in ReadFile's order: a
// regular file and, when limit is not negative, at most limit bytes.
func open(path string, limit int64) (*os.File, fs.FileInfo, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if err := check(path, fi, limit); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, fi, limit)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadTail reads the last limit bytes (at most) of the regular file at path
// (following symlinks): for logs that another party writes and that may
// grow without bound, where the end is what matters. It refuses what
// ReadFile refuses except size, with the same order of checks; a file that
// grows while it is read yields at most limit bytes. A missing file returns
// an error that wraps fs.ErrNotExist.
func ReadTail(path string, limit int64) ([]byte, error) {
	f, fi, err := open(path, -1)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if off := fi.Size() - limit; off > 0 {
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	b, err := io.ReadAll(io.LimitReader(f, max(limit, 0)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return b, nil
}

// check refuses what is not a regular file and, when limit is not
// negative, a file larger than limit.
func check(path string, fi fs.FileInfo, limit int64) error {
	if !fi.Mode().IsRegular() {
		return &FileError{Path: path, What: "is " + kind(fi.Mode()) + ", not a regular file", Err: ErrNotRegular}
	}
	if limit >= 0 && fi.Size() > limit {
		return &FileError{Path: path, What: fmt.Sprintf("is %d bytes, more than the %d allowed", fi.Size(), limit), Err: ErrTooLarge}
	}
	return nil
}

func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// FileError is a file refused before reading.
type FileError struct {
	Path string
	What string
	Err  error // ErrNotRegular or ErrTooLarge
}

func (e *FileError) Error() string { return e.Path + ": " + e.What }
func (e *FileError) Unwrap() error { return e.Err }

// ReadFileIn reads the regular file name inside root, at most limit bytes,
// never following a symbolic link in its last component (the Root keeps
// every other component inside root). It refuses what ReadFile refuses, in
// the same order, and also a file that is not the one its Lstat saw (a
// swap between the two). A missing file returns an error that wraps
// fs.ErrNotExist.
func ReadFileIn(root *os.Root, name string, limit int64) ([]byte, error) {
	lfi, err := root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := check(name, lfi, limit); err != nil {
		return nil, err
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil {
		err = check(name, fi, limit)
	}
	if err == nil && !os.SameFile(lfi, fi) {
		err = &FileError{Path: name, What: "was replaced while it was read", Err: ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, &FileError{Path: name, What: fmt.Sprintf("larger than %d bytes", limit), Err: ErrTooLarge}
	}
	return b, nil
}

// OpenLock opens (creating it if missing) the lock file at path for
// locking: OpenFile's checks, but a symbolic link at path is refused, not
// followed, so a dangling link at a lock path never makes corral create
// the file it points to (O_NOFOLLOW on the open, after an Lstat).
func OpenLock(path string, perm os.FileMode) (*os.File, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, &FileError{Path: path, What: "is a symbolic link, not a lock file", Err: ErrNotRegular}
		}
		if err := check(path, fi, -1); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOCTTY|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, &FileError{Path: path, What: "is a symbolic link, not a lock file", Err: ErrNotRegular}
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = check(path, fi, -1)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
