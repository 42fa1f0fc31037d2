package display

import (
	"io"
	"unicode/utf8"
)

// Writer is the stream form of [Text] for human output: every unsafe rune
// and invalid UTF-8 byte written through it is escaped as [Text] escapes
// it, except newline and tab, which pass so that lines and tables keep
// their shape. Nothing is cut. It is the CLI's last line of defence: a
// string that reached a human stream without [Text] still cannot move
// the cursor, set the title, write the clipboard (OSC 52), open a link
// (OSC 8) or reorder text. It cannot stop a value from starting a new
// line; values are passed through [Text] for that.
//
// A rune split across two writes is held back (at most three bytes) until
// the next write or [Writer.Flush]. Write reports len(p) on success, not
// the escaped length. Machine output (JSON) must not go through it: get
// the underlying writer with [Raw].
type Writer struct {
	w    io.Writer
	hold [utf8.UTFMax]byte
	n    int // bytes held in hold
	buf  []byte
}

// NewWriter returns a Writer over w. A Writer over a Writer is the inner
// one: escapes are never doubled.
func NewWriter(w io.Writer) *Writer {
	if dw, ok := w.(*Writer); ok {
		return dw
	}
	return &Writer{w: w}
}

// Raw returns the writer under w when w is a [Writer], else w: for output
// that is data (JSON), exact by contract, or a terminal handed to a
// session that draws on it.
func Raw(w io.Writer) io.Writer {
	if dw, ok := w.(*Writer); ok {
		return dw.w
	}
	return w
}

// Write escapes p and writes it.
func (d *Writer) Write(p []byte) (int, error) {
	d.buf = d.buf[:0]
	in := p
	if d.n > 0 {
		// Complete the held rune with the first bytes of p.
		k := min(utf8.UTFMax-d.n, len(p))
		tmp := append(d.hold[:d.n:d.n], p[:k]...)
		if !utf8.FullRune(tmp) {
			d.n = copy(d.hold[:], tmp)
			return len(p), nil
		}
		_, size := utf8.DecodeRune(tmp)
		if size <= d.n { // the held bytes alone are invalid
			d.buf = appendEscaped(d.buf, tmp[:d.n], true)
			d.n = 0
		} else {
			d.buf = appendEscaped(d.buf, tmp[:size], true)
			in = p[size-d.n:]
			d.n = 0
		}
	}
	// Hold back an incomplete rune at the end.
	end := len(in)
	for i := 1; i < utf8.UTFMax && i <= len(in); i++ {
		c := in[len(in)-i]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(in[len(in)-i:]) {
				end = len(in) - i
			}
			break
		}
	}
	d.buf = appendEscaped(d.buf, in[:end], true)
	d.n = copy(d.hold[:], in[end:])
	if _, err := d.w.Write(d.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a held incomplete rune, escaped as invalid bytes.
func (d *Writer) Flush() error {
	if d.n == 0 {
		return nil
	}
	b := appendEscaped(nil, d.hold[:d.n], true)
	d.n = 0
	_, err := d.w.Write(b)
	return err
}

// appendEscaped appends s with every unsafe rune and invalid byte escaped
// as [Text] does; newline and tab pass when lines is true.
func appendEscaped(dst, s []byte, lines bool) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f || lines && (c == '\n' || c == '\t') {
			dst = append(dst, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, '\\', 'x', hexDigit(c>>4), hexDigit(c&0xf))
		case Unsafe(r):
			dst = append(dst, escape(r)...)
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return dst
}

func hexDigit(b byte) byte { return "0123456789abcdef"[b&0xf] }
