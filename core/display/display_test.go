package display

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain text", 0, "plain text"},
		{"", 0, ""},
		{"\x1b[2J\x1b[Hno problems found", 0, `\x1b[2J\x1b[Hno problems found`},
		{"a\nb\tc\rd", 0, `a\nb\tc\rd`},
		{"del\x7f", 0, `del\x7f`},
		{"c1\u0085\u009b31m", 0, `c1\u0085\u009b31m`},
		{"evil\u202egnp.exe", 0, `evil\u202egnp.exe`},
		{"rlo\u2066lri\u2069pdi\u200bzw\ufeffbom", 0, `rlo\u2066lri\u2069pdi\u200bzw\ufeffbom`},
		{"line\u2028sep\u2029para", 0, `line\u2028sep\u2029para`},
		{"tag\U000E0041", 0, `tag\U000e0041`},
		{"pua\ue000", 0, `pua\ue000`},
		{"bad\xffutf8\xc3", 0, `bad\xffutf8\xc3`},
		{"repl\ufffd", 0, `repl\ufffd`},
		{"non\ufffechar", 0, `non\ufffechar`},
		{"gіthub.com ünïcödé 日本", 0, "gіthub.com ünïcödé 日本"},
		{"abcdefghij", 5, "abcd…"},
		{"abcde", 5, "abcde"},
		{"abcdef", 5, "abcd…"},
		{"ab\x1bcdef", 5, "ab…"}, // the escape \x1b does not fit and is not split
		{"日本語テキスト", 4, "日本語…"},
	} {
		if got := Text(tc.in, tc.max); got != tc.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestTextDefaultCap(t *testing.T) {
	got := Text(strings.Repeat("a", 10000), 0)
	if n := utf8.RuneCountInString(got); n != MaxText || !strings.HasSuffix(got, "…") {
		t.Fatalf("default cap: %d runes, suffix %q", n, got[len(got)-6:])
	}
}

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"github.com", 0, "github.com"},
		{"gіthub.com", 0, "xn--gthub-n2e.com (gіthub.com)"},
		{"xn--gthub-n2e.com", 0, "xn--gthub-n2e.com (gіthub.com)"},
		{"XN--GTHUB-N2E.COM", 0, "xn--gthub-n2e.com (gіthub.com)"},
		{"bücher.example", 0, "xn--bcher-kva.example (bücher.example)"},
		{"127.0.0.1", 0, "127.0.0.1"},
		{"evil\x1b[0m.com", 0, `evil\x1b[0m.com`},
		{"a\u202ecom.evil", 0, `a\u202ecom.evil`},          // IDNA rejects it: every non-ASCII rune escaped
		{"xn--zz.example", 0, "xn--zz.example"},            // broken punycode: ASCII only
		{"bad\xff.example", 0, `bad\xff.example`},          // invalid UTF-8
		{"аррӏе.com", 0, "xn--80ak6aa92e.com (аррӏе.com)"}, // whole-script confusable
		{"github.com.attacker-controlled-domain.example.net", 30, "…controlled-domain.example.net"},
		{"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.example.com", 20, "…q.r.s.example.com"},
		{"verylonglabelwithoutanydotsatallreallylong.com", 16, "…lreallylong.com"},
	} {
		if got := Host(tc.in, tc.max); got != tc.want {
			t.Errorf("Host(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestAuthority(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"github.com:443", "github.com:443"},
		{"gіthub.com:443", "xn--gthub-n2e.com (gіthub.com):443"},
		{"[::1]:22", "[::1]:22"},
		{"[::1]", "[::1]"},
		{"::1", "::1"},
		{"*.com:443", "*.com:443"},
		{"host:\x1b[31m", `host:\x1b[31m`},
		{"[\u202e]:1", `[\u202e]:1`},
	} {
		if got := Authority(tc.in, 0); got != tc.want {
			t.Errorf("Authority(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// checkSafe fails when out holds anything a display could act on.
func checkSafe(t *testing.T, fn, in, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("%s(%q) = %q: invalid UTF-8", fn, in, out)
	}
	for _, r := range out {
		if Unsafe(r) {
			t.Fatalf("%s(%q) = %q: holds unsafe rune %U", fn, in, out, r)
		}
	}
}

// hostile returns a random string drawn from the runes attackers use:
// controls, bidi, zero-width, look-alikes, invalid bytes, dots and colons.
func hostile(r *rand.Rand) string {
	parts := []string{"a", "z", ".", ":", "-", "[", "]", "\\", "x", "u", "1", "\x1b", "\x00", "\x7f", "\u0085",
		"\u202e", "\u2066", "\u200b", "\u200d", "\ufeff", "\u2028", "\U000E0001", "\ue000", "\xff", "\xc3",
		"і", "ü", "日", "xn--", "com", "…", "\ufffd", "\n", "\t", "ا", "\u0301"}
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := hostile(r)
		max := r.IntN(30) // includes <= 0 (the default)
		propText(t, s, max)
		propHost(t, s, max)
		out := Authority(s, max)
		checkSafe(t, "Authority", s, out)
	}
}

func propText(t *testing.T, s string, max int) {
	t.Helper()
	out := Text(s, max)
	checkSafe(t, "Text", s, out)
	m := max
	if m <= 0 {
		m = MaxText
	}
	if m < 2 {
		m = 2
	}
	if n := utf8.RuneCountInString(out); n > m {
		t.Fatalf("Text(%q, %d) = %q: %d runes", s, max, out, n)
	}
	if again := Text(out, max); again != out {
		t.Fatalf("Text not idempotent on %q: %q then %q", s, out, again)
	}
	// Without a cut, nothing is lost: an input of safe runes only comes
	// back unchanged.
	if utf8.ValidString(s) && !strings.ContainsFunc(s, Unsafe) && utf8.RuneCountInString(s) <= m && out != s {
		t.Fatalf("Text changed safe text %q to %q", s, out)
	}
}

func propHost(t *testing.T, s string, max int) {
	t.Helper()
	out := Host(s, max)
	checkSafe(t, "Host", s, out)
	m := max
	if m <= 0 {
		m = MaxHost
	}
	if m < 8 {
		m = 8
	}
	// At most two forms, each capped, plus " (" and ")".
	if n := utf8.RuneCountInString(out); n > 2*m+3 {
		t.Fatalf("Host(%q, %d) = %q: %d runes", s, max, out, n)
	}
	// The ASCII form comes first and holds no look-alike rune.
	first, _, _ := strings.Cut(out, " (")
	for _, r := range first {
		if r >= 0x80 && r != '…' {
			t.Fatalf("Host(%q) = %q: non-ASCII %U in the dialled form", s, out, r)
		}
	}
}

// A long name keeps its end: the registrable domain stays visible.
func TestHostKeepsEnd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		var labels []string
		for n := 1 + r.IntN(12); n > 0; n-- {
			labels = append(labels, strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(15)))
		}
		name := strings.Join(labels, ".") + ".example.com"
		out := Host(name, 24)
		if !strings.HasSuffix(out, ".example.com") && out != name {
			t.Fatalf("Host(%q, 24) = %q: lost the registrable domain", name, out)
		}
		if utf8.RuneCountInString(out) > 24 {
			t.Fatalf("Host(%q, 24) = %q: too long", name, out)
		}
	}
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", "abc", "\x1b[2J", "a\u202eb", "\xff\xfe", "gіthub.com", `\x1b`, "日本"} {
		f.Add(s, 0)
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1000 {
			max = 1000
		}
		propText(t, s, max)
	})
}

func FuzzHost(f *testing.F) {
	for _, s := range []string{"github.com", "gіthub.com", "xn--gthub-n2e.com", "a\u202ecom", "[::1]:443", "bad\xff", "*.com:443"} {
		f.Add(s, 0)
		f.Add(s, 10)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max > 1000 {
			max = 1000
		}
		propHost(t, s, max)
		checkSafe(t, "Authority", s, Authority(s, max))
	})
}

func BenchmarkTextPlain(b *testing.B) {
	for b.Loop() {
		Text("api.github.com:443 CONNECT", 0)
	}
}
