package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// A strict, bounded reader of a TLS ClientHello's server name, written
// without crypto/tls: the broker reads the first flight a box sends into a
// CONNECT tunnel, learns the name the client asks the upstream for, and
// forwards the bytes unchanged. Anything this reader does not accept
// whole (a truncated record, a second server_name, a duplicated
// extension, trailing bytes, a name that is not a plain DNS name) is an
// error: the upstream must never see a name the broker did not.

// MaxClientHello caps the bytes read for one ClientHello, record headers
// included. Real hellos are well under 4 KiB (post-quantum key shares
// included); 32 KiB leaves room for many pre-shared keys.
const MaxClientHello = 32 << 10

const (
	recordHandshake   = 0x16
	recordHeaderLen   = 5
	maxRecordPayload  = 1 << 14 // TLSPlaintext.length (RFC 8446 5.1)
	handshakeClient   = 0x01    // client_hello
	extServerName     = 0x0000
	serverNameHost    = 0x00 // host_name (RFC 6066 3)
	maxServerNameSize = 255
)

// errNotTLS means the first byte is not a TLS handshake record: the
// tunnel carries another protocol, or TLS that starts later.
var errNotTLS = errors.New("not a TLS handshake record")

// HelloError is a ClientHello the reader refused.
type HelloError struct{ Detail string }

func (e *HelloError) Error() string { return "malformed TLS ClientHello: " + e.Detail }

func helloErr(format string, a ...any) error { return &HelloError{Detail: fmt.Sprintf(format, a...)} }

// readClientHello reads the records of one ClientHello from br and returns
// every byte it read (to be forwarded as they are) and the server name,
// canonical (lowercase, no trailing dot), or "" when the hello has none.
// It reads no byte past the last record of the hello. errNotTLS (with no
// byte read) means the stream does not start with a handshake record.
func readClientHello(br *bufio.Reader) (raw []byte, sni string, err error) {
	first, err := br.Peek(1)
	if err != nil {
		return nil, "", err
	}
	if first[0] != recordHandshake {
		return nil, "", errNotTLS
	}
	var msg []byte // the handshake message, across records
	need := -1     // its full length once its header is in
	for need < 0 || len(msg) < need {
		var hdr [recordHeaderLen]byte
		if m, err := io.ReadFull(br, hdr[:]); err != nil {
			return append(raw, hdr[:m]...), "", truncated(err)
		}
		raw = append(raw, hdr[:]...)
		n := int(hdr[3])<<8 | int(hdr[4])
		switch {
		case hdr[0] != recordHandshake:
			return raw, "", helloErr("record type %d inside the hello", hdr[0])
		case hdr[1] != 0x03:
			return raw, "", helloErr("record version %d.%d", hdr[1], hdr[2])
		case n == 0 || n > maxRecordPayload:
			return raw, "", helloErr("record length %d", n)
		case len(raw)+n > MaxClientHello:
			return raw, "", helloErr("longer than %d bytes", MaxClientHello)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if m, err := io.ReadFull(br, raw[start:]); err != nil {
			return raw[:start+m], "", truncated(err)
		}
		msg = append(msg, raw[start:]...)
		if need < 0 && len(msg) >= 4 {
			if msg[0] != handshakeClient {
				return raw, "", helloErr("handshake type %d, want client_hello", msg[0])
			}
			need = 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if need > MaxClientHello {
				return raw, "", helloErr("longer than %d bytes", MaxClientHello)
			}
		}
	}
	if len(msg) != need {
		// A record that carries the hello's end and more (another
		// handshake message): nothing a client sends before the
		// server's answer.
		return raw, "", helloErr("%d bytes after the hello in its record", len(msg)-need)
	}
	sni, err = parseClientHello(msg[4:])
	return raw, sni, err
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return helloErr("truncated")
	}
	return err
}

// cursor reads big-endian fields from a byte slice; any read past its end
// sets bad and returns zeros.
type cursor struct {
	b   []byte
	bad bool
}

func (c *cursor) bytes(n int) []byte {
	if c.bad || n < 0 || n > len(c.b) {
		c.bad = true
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *cursor) u8() int {
	v := c.bytes(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (c *cursor) u16() int {
	v := c.bytes(2)
	if v == nil {
		return 0
	}
	return int(v[0])<<8 | int(v[1])
}

// parseClientHello reads a ClientHello body (RFC 8446 4.1.2, which TLS 1.0
// to 1.2 hellos share) and returns its server name, canonical, or "".
func parseClientHello(body []byte) (string, error) {
	c := &cursor{b: body}
	c.bytes(2)  // legacy_version
	c.bytes(32) // random
	if n := c.u8(); n > 32 {
		return "", helloErr("session id of %d bytes", n)
	} else {
		c.bytes(n)
	}
	if n := c.u16(); n < 2 || n%2 != 0 {
		return "", helloErr("cipher suites of %d bytes", n)
	} else {
		c.bytes(n)
	}
	if n := c.u8(); n < 1 {
		return "", helloErr("no compression methods")
	} else {
		c.bytes(n)
	}
	if c.bad {
		return "", helloErr("truncated body")
	}
	if len(c.b) == 0 {
		return "", nil // no extensions at all (TLS 1.0 style)
	}
	exts := &cursor{b: c.bytes(c.u16())}
	if c.bad || len(c.b) != 0 {
		return "", helloErr("bad extensions length")
	}
	seen := map[int]bool{}
	sni := ""
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.bytes(exts.u16())
		if exts.bad {
			return "", helloErr("truncated extension")
		}
		if seen[typ] {
			return "", helloErr("extension %d twice", typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		name, err := parseServerName(data)
		if err != nil {
			return "", err
		}
		sni = name
	}
	return sni, nil
}

// parseServerName reads a server_name extension: exactly one host_name,
// an ASCII DNS name (no IP literal, RFC 6066 3), returned canonical.
func parseServerName(data []byte) (string, error) {
	c := &cursor{b: data}
	list := &cursor{b: c.bytes(c.u16())}
	if c.bad || len(c.b) != 0 {
		return "", helloErr("bad server_name length")
	}
	name := ""
	for len(list.b) > 0 {
		typ := list.u8()
		v := list.bytes(list.u16())
		switch {
		case list.bad:
			return "", helloErr("truncated server_name")
		case typ != serverNameHost:
			return "", helloErr("server_name of type %d", typ)
		case name != "":
			return "", helloErr("two host names")
		case len(v) == 0 || len(v) > maxServerNameSize:
			return "", helloErr("host name of %d bytes", len(v))
		}
		for _, b := range v {
			if b < 0x21 || b > 0x7e {
				return "", helloErr("host name byte %#x", b)
			}
		}
		canon, err := canonicalHost(string(v))
		if err != nil || canon != lowerASCII(trimDot(string(v))) {
			return "", helloErr("host name is not a DNS name")
		}
		name = canon
	}
	if name == "" {
		return "", helloErr("empty server_name")
	}
	return name, nil
}

func trimDot(s string) string {
	if len(s) > 0 && s[len(s)-1] == '.' {
		return s[:len(s)-1]
	}
	return s
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
