// Package display makes strings that came from a repository or a box safe to
// show to the user: in a terminal, a menu item or a notification.
//
// Everything a repository or a box can write is hostile. A string shown raw
// can move the cursor, rewrite earlier lines ("no problems found"), reorder
// text with bidi overrides (U+202E), or pass a look-alike host name
// ("gіthub.com" with a Cyrillic і) for the real one. The functions here are
// the edge of display: call them on every such string just before it is
// shown, never earlier (stored and logged data stay exact).
//
// The rules:
//
//   - [Text]: every rune that is not plainly visible text is escaped in the
//     Go notation (\x1b, \u202e, \U000e0001; invalid UTF-8 bytes as \xff),
//     so the output holds no C0 or C1 control, DEL, format (Cf, which holds
//     the bidi controls and zero-width runes), private-use, line or paragraph
//     separator rune. Long strings are cut at the end with "…".
//   - [Host]: a host name is shown in its ASCII form; a name with non-ASCII or
//     punycode labels gets its Unicode form beside it in parentheses, so the
//     user sees both what will be dialled and what it looks like. Long names
//     are cut from the LEFT ("…evil.example.com") so that the registrable
//     domain, the part that says who owns the name, stays visible.
//   - [Authority]: "host:port" with the host shown as by [Host].
//
// Output of [Text] is stable: Text(Text(s, n), n) == Text(s, n). The
// backslash itself is not escaped, so an escape in the output cannot be told
// from a literal backslash sequence in the input; that is deliberate (no
// forged control can result, and idempotence lets callers sanitise twice
// without double escapes).
package display

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Default caps, in runes, used when a caller passes max <= 0.
const (
	// MaxText caps free text (a request line, a config value, an error
	// detail from a box).
	MaxText = 200
	// MaxHost caps each form of a host name (DNS names are at most 253).
	MaxHost = 80
)

const ellipsis = "…"

// Unsafe reports whether r must not reach a display raw: controls (C0, C1,
// DEL), format runes (bidi embeddings, overrides and isolates, zero-width
// joiners, BOM, tag characters), private-use and surrogate code points,
// line and paragraph separators, and noncharacters. The Unicode
// replacement character is unsafe too: [Text] uses it nowhere, and an
// input that carries it is shown as \ufffd.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r < 0xa0:
		return true
	case r < 0x7f:
		return false
	case r == utf8.RuneError, r > unicode.MaxRune:
		return true
	case r&0xfffe == 0xfffe, r >= 0xfdd0 && r <= 0xfdef: // noncharacters
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp)
}

// Text returns s for display on one line: unsafe runes and invalid UTF-8
// escaped, at most max runes (max <= 0 means [MaxText]); a cut string ends
// in "…". An escape is never split by the cut.
func Text(s string, max int) string {
	if max <= 0 {
		max = MaxText
	}
	if max < 2 {
		max = 2
	}
	if plain(s, max) {
		return s
	}
	var b strings.Builder
	n := 0 // runes written
	cut := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		var piece string
		switch {
		case r == utf8.RuneError && size == 1:
			piece = fmt.Sprintf(`\x%02x`, s[i])
		case Unsafe(r):
			piece = escape(r)
		default:
			piece = s[i : i+size]
		}
		i += size
		pn := utf8.RuneCountInString(piece)
		// Keep room for the ellipsis unless this piece ends the string.
		limit := max - 1
		if i == len(s) {
			limit = max
		}
		if n+pn > limit {
			cut = true
			break
		}
		b.WriteString(piece)
		n += pn
	}
	if cut {
		b.WriteString(ellipsis)
	}
	return b.String()
}

// plain reports whether s needs no change: printable ASCII, no longer than
// max. It is the fast path for the common case.
func plain(s string, max int) bool {
	if len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

func escape(r rune) string {
	switch r {
	case '\t':
		return `\t`
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	}
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xffff:
		return fmt.Sprintf(`\u%04x`, r)
	default:
		return fmt.Sprintf(`\U%08x`, r)
	}
}

// Host returns a host name (or IP literal) for display. An ASCII name is
// shown as it is (escaped if it holds controls). A name with non-ASCII runes
// is shown as punycode with its Unicode form beside it in parentheses, e.g.
// "xn--gthub-n4e.com (gіthub.com)"; a punycode name gets its Unicode form
// beside it the same way. A name that IDNA rejects is shown with every
// non-ASCII rune escaped. Each form is at most max runes (max <= 0 means
// [MaxHost]), cut from the left so that the end of the name stays visible.
func Host(h string, max int) string {
	if max <= 0 {
		max = MaxHost
	}
	if max < 8 {
		max = 8
	}
	ascii := isASCII(h)
	if ascii && !strings.Contains(strings.ToLower(h), "xn--") {
		return cutLeft(Text(h, len(h)*10+1), max)
	}
	if !utf8.ValidString(h) {
		return cutLeft(asciiEscape(h), max)
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		if ascii {
			return cutLeft(Text(h, len(h)*10+1), max)
		}
		return cutLeft(asciiEscape(h), max)
	}
	u, err := idna.Display.ToUnicode(a)
	out := cutLeft(Text(a, len(a)*10+1), max)
	if err != nil || u == a {
		return out
	}
	return out + " (" + cutLeft(Text(u, len(u)*10+1), max) + ")"
}

// Authority returns "host:port" (or "[v6]:port", or a bare host) for
// display, with the host as by [Host]. Text that does not split into a host
// and a numeric port is shown as by [Text] with the same cap.
func Authority(s string, max int) string {
	if max <= 0 {
		max = MaxHost
	}
	host, port := s, ""
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.HasSuffix(s, "]") {
		if p, err := strconv.Atoi(s[i+1:]); err == nil && p >= 0 && p <= 65535 && s[i+1:] == strconv.Itoa(p) {
			host, port = s[:i], s[i+1:]
		}
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		inner := host[1 : len(host)-1]
		if isASCII(inner) && !strings.ContainsAny(inner, "[]") {
			return join("["+Text(inner, max)+"]", port)
		}
	}
	if strings.Count(host, ":") > 0 { // a bare IPv6 literal or junk
		return join(Text(host, max), port)
	}
	return join(Host(host, max), port)
}

func join(host, port string) string {
	if port == "" {
		return host
	}
	return host + ":" + port
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// asciiEscape escapes every non-ASCII rune and every unsafe one: the form
// of a host name that IDNA rejected, so no look-alike rune is shown.
func asciiEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r >= 0x80 || Unsafe(r):
			b.WriteString(escape(r))
		default:
			b.WriteByte(s[i])
		}
		i += size
	}
	return b.String()
}

// cutLeft keeps the last max-1 runes of s behind "…" when s is longer than
// max runes, starting at a label boundary when one is close enough, and
// never inside an escape sequence. s is already safe (escaped) text.
func cutLeft(s string, max int) string {
	n := utf8.RuneCountInString(s)
	if n <= max {
		return s
	}
	// Byte offset where the last max-1 runes start.
	skip := n - (max - 1)
	start := 0
	for i := range s {
		if skip == 0 {
			start = i
			break
		}
		skip--
	}
	// Do not start inside an escape: move right past any backslash
	// sequence that begins before start and reaches into the kept part.
	start = escapeBoundary(s, start)
	tail := s[start:]
	// Prefer a label boundary, unless it would drop more than half of what
	// is left.
	if i := strings.IndexByte(tail, '.'); i > 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	return ellipsis + tail
}

// escapeBoundary returns the first offset >= start that is not inside one
// of the escapes Text writes (\xNN, \uNNNN, \UNNNNNNNN, \t, \n, \r).
func escapeBoundary(s string, start int) int {
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			i++
			if i > start {
				return start
			}
			continue
		}
		l := 2
		switch s[i+1] {
		case 'x':
			l = 4
		case 'u':
			l = 6
		case 'U':
			l = 10
		}
		if i+l > len(s) {
			l = len(s) - i
		}
		if i < start && start < i+l {
			return i + l
		}
		if i >= start {
			return start
		}
		i += l
	}
	return start
}

// Clock is t as a person reads it beside now: "15:04" on the same day,
// else "2006-01-02 15:04", in now's location.
func Clock(t, now time.Time) string {
	t = t.In(now.Location())
	if y, m, d := t.Date(); y == now.Year() && m == now.Month() && d == now.Day() {
		return t.Format("15:04")
	}
	return t.Format("2006-01-02 15:04")
}
