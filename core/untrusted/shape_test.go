package untrusted

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
)

func TestCheckJSON(t *testing.T) {
	lim := Limits{Depth: 8, Items: 20}
	for _, tc := range []struct {
		name string
		data string
		err  error
	}{
		{"flat", `{"a": 1, "b": [1, 2]}`, nil},
		{"at the depth cap", strings.Repeat("[", 8) + strings.Repeat("]", 8), nil},
		{"over the depth cap", strings.Repeat("[", 9) + strings.Repeat("]", 9), ErrTooDeep},
		{"objects over the cap", strings.Repeat(`{"a":`, 9) + "1" + strings.Repeat("}", 9), ErrTooDeep},
		{"brackets in strings", `{"a": "[[[[[[[[[[[[[[[[[[[[[[[\"[[[[[[[[[[[[[["}`, nil},
		{"too many items", "[" + strings.Repeat("1,", 20) + "1]", ErrTooMany},
		{"commas in strings", `["` + strings.Repeat(",", 100) + `"]`, nil},
	} {
		err := CheckJSON([]byte(tc.data), lim)
		if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("%s: CheckJSON = %v, want %v", tc.name, err, tc.err)
		}
	}
}

func TestCheckTOMLItems(t *testing.T) {
	lim := Limits{Depth: 8, Items: 10}
	if err := CheckTOML([]byte("a = 1\nb = [1, 2]\n[t]\nc = 'x,=,['\n"), lim); err != nil {
		t.Errorf("small file: %v", err)
	}
	err := CheckTOML([]byte("a = 1\n"+strings.Repeat("b = 2\n", 20)), lim)
	var se *ShapeError
	if !errors.Is(err, ErrTooMany) || !errors.As(err, &se) || se.Line != 11 {
		t.Errorf("too many keys: %v", err)
	}
}

// TestReadShaped: ReadTOML and ReadJSON refuse by size, depth and count,
// and special files without blocking, each error naming the file.
func TestReadShaped(t *testing.T) {
	dir := t.TempDir()
	lim := Limits{Size: 1 << 10, Depth: 4, Items: 50}
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		read func(string, Limits) ([]byte, error)
		err  error
	}{
		{write("ok.toml", "a = [1, {b = 2}]\n"), ReadTOML, nil},
		{write("ok.json", `{"a": [1, {"b": 2}]}`), ReadJSON, nil},
		{write("deep.toml", "a = "+strings.Repeat("{b=", 10)+"1"+strings.Repeat("}", 10)), ReadTOML, ErrTooDeep},
		{write("deep.json", strings.Repeat("[", 10)+strings.Repeat("]", 10)), ReadJSON, ErrTooDeep},
		{write("many.json", "["+strings.Repeat("1,", 60)+"1]"), ReadJSON, ErrTooMany},
		{write("big.json", "["+strings.Repeat(" ", 2000)+"]"), ReadJSON, ErrTooLarge},
		{fifo, ReadJSON, ErrNotRegular},
		{zero, ReadTOML, ErrNotRegular},
		{dir, ReadTOML, ErrNotRegular},
	} {
		done := make(chan error, 1)
		go func() { _, err := tc.read(tc.path, lim); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("%s: %v, want %v", tc.path, err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.path) {
				t.Errorf("%s: error does not name the file: %v", tc.path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: blocked", tc.path)
		}
	}
}

// FuzzShapedReaders: whatever ReadTOML or ReadJSON returns parses (when it
// parses at all) no deeper than the cap, with no more items than the cap
// allows, and never more than Size bytes; a file that is not regular is
// refused. The content is fuzzed; the file kind is a fuzzed choice.
func FuzzShapedReaders(f *testing.F) {
	for _, s := range []string{"a = 1", "a = [[[1]]]", "a = {b = {c = 1}}", "[a.b.c]\nd = 1", `{"a": [[[1]]]}`, `[[[[[[[[[[]]]]]]]]]]`, `"[[[["`, "a = '''\n[[[[\n'''", "x = 1.5"} {
		f.Add([]byte(s), uint8(0))
	}
	lim := Limits{Size: 4 << 10, Depth: 6, Items: 64}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, kind uint8) {
		p := filepath.Join(dir, "f")
		os.Remove(p)
		switch kind % 4 {
		case 1:
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Skip(err)
			}
			if _, err := ReadTOML(p, lim); !errors.Is(err, ErrNotRegular) {
				t.Fatalf("FIFO: %v", err)
			}
			return
		case 2:
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Skip(err)
			}
			if _, err := ReadJSON(p, lim); !errors.Is(err, ErrNotRegular) {
				t.Fatalf("/dev/zero: %v", err)
			}
			return
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := ReadJSON(p, lim); err == nil {
			if int64(len(b)) > lim.Size {
				t.Fatalf("ReadJSON returned %d bytes", len(b))
			}
			var v any
			if json.Unmarshal(b, &v) == nil {
				if d := depthOf(v); d > lim.Depth {
					t.Fatalf("JSON depth %d passed", d)
				}
				if n := countOf(v); n > lim.Items+1 {
					t.Fatalf("JSON items %d passed", n)
				}
			}
		}
		if b, err := ReadTOML(p, lim); err == nil {
			if int64(len(b)) > lim.Size {
				t.Fatalf("ReadTOML returned %d bytes", len(b))
			}
			var v map[string]any
			if _, err := toml.Decode(string(b), &v); err == nil {
				if d := depthOf(v); d > lim.Depth {
					t.Fatalf("TOML depth %d passed: %q", d, b)
				}
			}
		}
	})
}

// depthOf is how deeply a decoded value nests: objects, tables and arrays.
func depthOf(v any) int {
	d := 0
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			d = max(d, depthOf(c))
		}
		return d + 1
	case []map[string]any:
		for _, c := range v {
			d = max(d, depthOf(c))
		}
		return d + 1
	case []any:
		for _, c := range v {
			d = max(d, depthOf(c))
		}
		return d + 1
	}
	return 0
}

// countOf counts containers and their members (a lower bound of the
// scanner's items: each member needs a ':' or ',' or is the first).
func countOf(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for _, c := range v {
			n += countOf(c)
		}
		return n + len(v)
	case []any:
		for _, c := range v {
			n += countOf(c)
		}
		return n + 1
	}
	return 0
}
