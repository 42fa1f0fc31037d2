// Package untrustedtest puts bad files where a test expects a state file:
// the special files and broken contents that core/untrusted must refuse,
// so that each reader of corral's own state is tested against the same
// list.
package untrustedtest

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Kind is one bad file.
type Kind string

// Kinds of bad files.
const (
	FIFO      Kind = "fifo"      // opening it for reading blocks until a writer comes
	DevZero   Kind = "dev-zero"  // a symlink to /dev/zero: reading it never ends
	Directory Kind = "directory" // not a file at all
	Socket    Kind = "socket"    // a listening unix socket
	Sparse    Kind = "sparse"    // a regular file of 1 TiB, all holes
	Huge      Kind = "huge"      // a regular file of 4 MiB of digits (over every state file cap)
	Truncated Kind = "truncated" // half of a JSON object
	Garbage   Kind = "garbage"   // control bytes and escapes
	Deep      Kind = "deep"      // 40 KB of nesting 20,000 deep (under every size cap; a parser's cost is in the depth)
)

// Special are the kinds that are not regular files.
var Special = []Kind{FIFO, DevZero, Directory, Socket}

// All are every kind: Special, then regular files with bad content.
var All = append(append([]Kind{}, Special...), Sparse, Huge, Truncated, Garbage, Deep)

// Make puts a bad file of kind at path (creating its directory), replacing
// what is there. A kind this system cannot make (a unix socket path longer
// than sun_path, a file system without sparse files) skips the test.
func Make(t testing.TB, path string, kind Kind) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	var err error
	switch kind {
	case FIFO:
		err = syscall.Mkfifo(path, 0o600)
	case DevZero:
		err = os.Symlink("/dev/zero", path)
	case Directory:
		err = os.Mkdir(path, 0o700)
	case Socket:
		ln, lerr := net.Listen("unix", path)
		if lerr != nil {
			t.Skipf("cannot make a socket at %s: %v", path, lerr)
		}
		t.Cleanup(func() { ln.Close() })
	case Sparse:
		f, ferr := os.Create(path)
		if ferr != nil {
			t.Fatal(ferr)
		}
		if err := f.Truncate(1 << 40); err != nil {
			f.Close()
			t.Skipf("no sparse files here: %v", err)
		}
		err = f.Close()
	case Huge:
		err = os.WriteFile(path, []byte(strings.Repeat("1234567890", 4<<20/10)), 0o600)
	case Truncated:
		err = os.WriteFile(path, []byte(`{"name": "a", "proj`), 0o600)
	case Deep:
		err = os.WriteFile(path, []byte("x = "+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+"\n"), 0o600)
	case Garbage:
		err = os.WriteFile(path, []byte("\x1b]0;owned\x07\x00\xff\xfe garbage \x1b[2J"), 0o600)
	default:
		t.Fatalf("unknown kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}
