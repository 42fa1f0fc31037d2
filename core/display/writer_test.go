package display

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// checkLines fails when out holds an unsafe rune other than newline and
// tab (the two a Writer lets through) or invalid UTF-8.
func checkLines(t *testing.T, in []byte, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("Writer(%q) = %q: invalid UTF-8", in, out)
	}
	for _, r := range out {
		if Unsafe(r) && r != '\n' && r != '\t' {
			t.Fatalf("Writer(%q) = %q: holds unsafe rune %U", in, out, r)
		}
	}
}

// write sends in through a Writer in the given pieces and returns what
// reached the underlying writer.
func write(t *testing.T, in []byte, cuts []int) string {
	t.Helper()
	var b bytes.Buffer
	w := NewWriter(&b)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		if c < prev || c > len(in) {
			continue
		}
		n, err := w.Write(in[prev:c])
		if err != nil || n != c-prev {
			t.Fatalf("Write(%q) = %d, %v", in[prev:c], n, err)
		}
		prev = c
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriter(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ok  box: fine\n", "ok  box: fine\n"},
		{"a\tb\n", "a\tb\n"},
		{"\x1b[2J\x1b]8;;http://x\x07y\x1b]8;;\x07", `\x1b[2J\x1b]8;;http://x\x07y\x1b]8;;\x07`},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"\u009b31m", `\u009b31m`},
		{"a\u202eb\r", `a\u202eb\r`},
		{"日本\xff", `日本\xff`},
	} {
		if got := write(t, []byte(c.in), nil); got != c.want {
			t.Errorf("Writer(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A rune split across writes comes out whole; so does every escape.
func TestWriterSplitRunes(t *testing.T) {
	in := []byte("a\u202eb日\U000E0001c\xe2\x80")
	whole := write(t, in, nil)
	if whole != `a\u202eb日\U000e0001c\xe2\x80` {
		t.Fatalf("whole: %q", whole)
	}
	for i := range len(in) + 1 {
		for j := i; j <= len(in); j++ {
			if got := write(t, in, []int{i, j}); got != whole {
				t.Fatalf("cut at %d,%d: %q, want %q", i, j, got, whole)
			}
		}
	}
}

// The property: whatever is written, in whatever pieces, nothing unsafe
// but newline and tab comes out, and safe text comes out unchanged.
func TestWriterProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		s := []byte(hostile(r))
		var cuts []int
		for n := r.IntN(4); n > 0; n-- {
			cuts = append(cuts, r.IntN(len(s)+1))
		}
		propWriter(t, s, cuts)
	}
}

func propWriter(t *testing.T, s []byte, cuts []int) {
	t.Helper()
	out := write(t, s, cuts)
	checkLines(t, s, out)
	if out != write(t, s, nil) {
		t.Fatalf("Writer(%q) depends on how it is cut (%v)", s, cuts)
	}
	if utf8.Valid(s) && !strings.ContainsFunc(string(s), func(r rune) bool { return Unsafe(r) && r != '\n' && r != '\t' }) && out != string(s) {
		t.Fatalf("Writer changed safe text %q to %q", s, out)
	}
	// Each line (and field) of the output is what Text makes of it, uncut.
	for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\t' }) {
		if Text(line, len(line)+1) != line {
			t.Fatalf("Writer(%q): line %q is not stable under Text", s, line)
		}
	}
}

func TestWriterRaw(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	if NewWriter(w) != w {
		t.Fatal("a Writer over a Writer must be the inner one")
	}
	if Raw(w) != &b || Raw(&b) != &b {
		t.Fatal("Raw must return the writer under a Writer")
	}
}

func FuzzWriter(f *testing.F) {
	for _, s := range []string{"", "ok\n", "\x1b[2J", "a\u202eb", "\xff\xfe", "\x1b]52;c;aGk=\x07", "\u009b", "日本"} {
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, s []byte, cut int) {
		if len(s) > 4096 {
			s = s[:4096]
		}
		propWriter(t, s, []int{max(cut, 0) % (len(s) + 1)})
	})
}
