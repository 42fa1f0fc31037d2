package egress

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"io"
	"math/big"
	"net"
	"strconv"
	"strings"
	"testing"
	"testing/quick"
	"time"
)

// testCert is a self-signed certificate for names (DNS names, or IP
// literals) and a pool that trusts it.
func testCert(t testing.TB, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// tlsEcho is a TLS echo server on 127.0.0.1 with a certificate for names;
// it records the server name each client asked for.
func tlsEcho(t *testing.T, names ...string) (addr string, pool *x509.CertPool, seen chan string) {
	t.Helper()
	cert, pool := testCert(t, names...)
	seen = make(chan string, 16)
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		seen <- h.ServerName
		return nil, nil
	}}
	addr = serveConns(t, func(c net.Conn) {
		tc := tls.Server(c, cfg)
		tc.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
		io.Copy(tc, tc)                                  //nolint:errcheck
	})
	return addr, pool, seen
}

// tlsThrough CONNECTs to target through the proxy and runs a TLS
// handshake asking for serverName, then an echo.
func tlsThrough(t *testing.T, proxy, target, serverName string, pool *x509.CertPool) error {
	t.Helper()
	status, c, br, body := rawConnect(t, proxy, target)
	if status != 200 {
		return errors.New("CONNECT answered " + body)
	}
	defer c.Close()
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{ServerName: serverName, RootCAs: pool})
	tc.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	if err := tc.Handshake(); err != nil {
		return err
	}
	if _, err := io.WriteString(tc, "ping"); err != nil {
		return err
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(tc, got); err != nil || string(got) != "ping" {
		return errors.New("echo through TLS failed")
	}
	return nil
}

// bufConn reads through r (which may hold bytes already read from Conn).
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

func TestTunnelServerNameMustMatch(t *testing.T) {
	addr, pool, seen := tlsEcho(t, "allowed.test", "other.test", "Mixed.test", "127.0.0.1")
	port := portOf(t, addr)
	p := startProxy(t, []string{"allowed.test:*", "other.test:*", "mixed.test:*", "ranged.test:*"}, []string{"127.0.0.0/8"}, nil)

	for _, tc := range []struct {
		name, target, sni string
		ok                bool
	}{
		{"same name", "allowed.test:" + port, "allowed.test", true},
		{"case and trailing dot", "allowed.test:" + port, "ALLOWED.test.", true},
		{"CONNECT name in upper case", "ALLOWED.TEST:" + port, "allowed.test", true},
		{"fronting through an allowed name", "allowed.test:" + port, "other.test", false},
		{"fronting to a name off the list", "allowed.test:" + port, "evil.test", false},
		{"IP literal, allowed name", "127.0.0.1:" + port, "other.test", true},
		{"IP literal, name off the list", "127.0.0.1:" + port, "evil.test", false},
		{"IP literal, no name", "127.0.0.1:" + port, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sni := tc.sni
			cfgName := sni
			if sni == "" {
				cfgName = "127.0.0.1" // crypto/tls sends no SNI for an IP
			}
			err := tlsThrough(t, p.addr, tc.target, cfgName, pool)
			if tc.ok {
				if err != nil && !strings.Contains(err.Error(), "certificate") {
					t.Fatalf("handshake: %v", err)
				}
				select {
				case got := <-seen:
					if want := strings.ToLower(strings.TrimSuffix(sni, ".")); !strings.EqualFold(got, want) && !(sni == "" && got == "") {
						t.Errorf("upstream saw server name %q, want %q", got, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("the upstream never saw the hello")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "access denied") {
				t.Fatalf("handshake = %v, want the broker's access denied alert", err)
			}
			d := p.log.last()
			if d.Allowed || d.Reason != ReasonSNIMismatch || d.SNI != strings.ToLower(sni) || d.Kind != KindConnect {
				t.Errorf("logged %+v", d)
			}
			select {
			case got := <-seen:
				t.Errorf("the upstream saw a refused hello for %q", got)
			default:
			}
		})
	}
}

// TestTunnelNotTLSAndServerFirst: a tunnel whose client speaks first in
// another protocol is relayed as before, and a server that speaks first
// is heard before the client sends anything.
func TestTunnelNotTLSAndServerFirst(t *testing.T) {
	banner := serveConns(t, func(c net.Conn) {
		io.WriteString(c, "220 hello\r\n") //nolint:errcheck
		io.Copy(c, c)                      //nolint:errcheck
	})
	p := startProxy(t, []string{"allowed.test:*"}, []string{"127.0.0.0/8"}, nil)
	status, c, br, body := rawConnect(t, p.addr, "allowed.test:"+portOf(t, banner))
	if status != 200 {
		t.Fatalf("CONNECT = %d %s", status, body)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
	line, err := br.ReadString('\n')
	if err != nil || line != "220 hello\r\n" {
		t.Fatalf("banner = %q %v", line, err)
	}
	echoRoundTrip(t, c, br, "EHLO box\r\n")
}

// TestTunnelMalformedHello: a tunnel that starts like TLS but is no
// ClientHello the broker reads whole is refused before anything reaches
// the upstream.
func TestTunnelMalformedHello(t *testing.T) {
	got := make(chan []byte, 1)
	up := serveConns(t, func(c net.Conn) {
		c.SetReadDeadline(time.Now().Add(2 * time.Second)) //nolint:errcheck
		b, _ := io.ReadAll(c)
		got <- b
	})
	p := startProxy(t, []string{"allowed.test:*"}, []string{"127.0.0.0/8"}, nil)
	status, c, br, _ := rawConnect(t, p.addr, "allowed.test:"+portOf(t, up))
	if status != 200 {
		t.Fatal(status)
	}
	defer c.Close()
	hello := clientHello(t, "allowed.test")
	hello = append(hello, hello...) // two hellos in one flight: the second is trailing data in no record of the first
	hello[4]++                      // the first record claims one byte more
	c.Write(hello)                  //nolint:errcheck
	alert := make([]byte, 7)
	if _, err := io.ReadFull(br, alert); err != nil || alert[0] != 0x15 || alert[6] != alertDecodeError {
		t.Fatalf("answer = % x %v, want a decode_error alert", alert, err)
	}
	if b := <-got; len(b) != 0 {
		t.Errorf("the upstream got %d bytes", len(b))
	}
	if d := p.log.last(); d.Allowed || d.Reason != ReasonBadHello {
		t.Errorf("logged %+v", d)
	}
}

// clientHello is the first flight crypto/tls sends for serverName.
func clientHello(t testing.TB, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		tls.Client(a, &tls.Config{ServerName: serverName}).Handshake() //nolint:errcheck
		a.Close()
	}()
	raw, _, err := readClientHello(bufio.NewReader(b))
	if err != nil {
		t.Fatalf("reading crypto/tls's hello for %q: %v", serverName, err)
	}
	return raw
}

// TestReadClientHelloProperty: for any DNS name, the reader returns what
// crypto/tls asked for, canonical, and exactly the bytes of the hello
// whatever the records are split into.
func TestReadClientHelloProperty(t *testing.T) {
	labelChars := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-"
	f := func(seed []byte, split uint16) bool {
		var labels []string
		for i := 0; i < len(seed) && len(labels) < 4; i += 5 {
			l := make([]byte, 1+int(seed[i])%9)
			for j := range l {
				l[j] = labelChars[(int(seed[i])+j*7)%26]
			}
			labels = append(labels, string(l))
		}
		name := strings.Join(append(labels, "test"), ".")
		raw := clientHello(t, name)
		_, sni, err := readClientHello(bufio.NewReader(bytes.NewReader(append(raw, "tail"...))))
		if err != nil || sni != strings.ToLower(name) {
			t.Logf("%q: %q %v", name, sni, err)
			return false
		}
		// The same handshake message in two records.
		msg := raw[5:]
		cut := 1 + int(split)%(len(msg)-1)
		re := append(record(msg[:cut]), record(msg[cut:])...)
		got, sni2, err := readClientHello(bufio.NewReader(bytes.NewReader(append(re, "tail"...))))
		return err == nil && sni2 == sni && bytes.Equal(got, re)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Fatal(err)
	}
}

func record(payload []byte) []byte {
	h := []byte{0x16, 0x03, 0x01, 0, 0}
	binary.BigEndian.PutUint16(h[3:], uint16(len(payload)))
	return append(h, payload...)
}

// TestReadClientHelloRefuses: the hellos a client never sends, each of
// which could show the upstream a name the broker did not see.
func TestReadClientHelloRefuses(t *testing.T) {
	good := clientHello(t, "allowed.test")
	msg := good[5:]
	sniExt := serverNameExt("allowed.test")
	for name, in := range map[string][]byte{
		"empty record":           append(record(nil), good...),
		"record too long":        {0x16, 0x03, 0x01, 0x40, 0x01},
		"not a client hello":     record(append([]byte{0x02}, msg[1:]...)),
		"trailing handshake":     record(append(append([]byte{}, msg...), 0x14, 0, 0, 0)),
		"truncated":              good[:len(good)-1],
		"second server_name":     withExtension(t, msg, sniExt),
		"two host names":         withExtension(t, msg, serverNameExtRaw([]byte("a.test"), []byte("b.test"))),
		"IP literal name":        withoutSNI(t, msg, serverNameExtRaw([]byte("127.0.0.1"))),
		"NUL in name":            withoutSNI(t, msg, serverNameExtRaw([]byte("allowed.test\x00.evil.test"))),
		"other name type":        withoutSNI(t, msg, []byte{0, 0, 0, 9, 0, 7, 1, 0, 4, 'a', '.', 't', 't'}),
		"non-ASCII name":         withoutSNI(t, msg, serverNameExtRaw([]byte("ällowed.test"))),
		"wrong record version":   append([]byte{0x16, 0x02, 0x00}, good[3:]...),
		"alert inside the hello": append(record(msg[:10]), append([]byte{0x15, 0x03, 0x03, 0, 2}, 2, 40)...),
	} {
		_, sni, err := readClientHello(bufio.NewReader(bytes.NewReader(in)))
		if err == nil {
			t.Errorf("%s: read, server name %q", name, sni)
		}
	}
	if _, _, err := readClientHello(bufio.NewReader(strings.NewReader("GET / HTTP/1.1\r\n"))); !errors.Is(err, errNotTLS) {
		t.Errorf("plain HTTP: %v, want errNotTLS", err)
	}
}

// TestReadClientHelloAgreesWithTLS: on every hello the reader accepts
// (crypto/tls's own, and the edited ones the refusal test builds from it
// that it accepts), crypto/tls's server reads the same server name.
func TestReadClientHelloAgreesWithTLS(t *testing.T) {
	good := clientHello(t, "Allowed.test")
	for _, in := range [][]byte{good, withoutSNI(t, good[5:], serverNameExt("x.test")), withoutSNI(t, good[5:], nil)} {
		_, sni, err := readClientHello(bufio.NewReader(bytes.NewReader(in)))
		if err != nil {
			t.Fatal(err)
		}
		name, called := "", false
		srv := tls.Server(&bytesConn{r: bytes.NewReader(in)}, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name, called = h.ServerName, true
			return nil, errors.New("stop")
		}})
		srv.Handshake() //nolint:errcheck
		if !called || !strings.EqualFold(name, sni) {
			t.Errorf("the broker read server name %q, crypto/tls %q (called %v)", sni, name, called)
		}
	}
}

// bytesConn is a connection that reads r and discards what is written.
type bytesConn struct {
	net.Conn // nil: only the methods below are called
	r        io.Reader
}

func (c *bytesConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *bytesConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *bytesConn) Close() error                { return nil }

func serverNameExt(name string) []byte { return serverNameExtRaw([]byte(name)) }

// serverNameExtRaw is a whole server_name extension with host names.
func serverNameExtRaw(names ...[]byte) []byte {
	var list []byte
	for _, n := range names {
		list = append(list, 0, byte(len(n)>>8), byte(len(n)))
		list = append(list, n...)
	}
	data := append([]byte{byte(len(list) >> 8), byte(len(list))}, list...)
	return append([]byte{0, 0, byte(len(data) >> 8), byte(len(data))}, data...)
}

// helloParts splits a handshake message into the part before the
// extensions and the extensions.
func helloParts(t testing.TB, msg []byte) (head, exts []byte) {
	t.Helper()
	c := &cursor{b: msg[4:]}
	c.bytes(34)
	c.bytes(c.u8())
	c.bytes(c.u16())
	c.bytes(c.u8())
	off := len(msg) - len(c.b)
	return msg[:off], msg[off+2:]
}

// rebuild is a handshake message with head and extensions, as a record.
func rebuild(head, exts []byte) []byte {
	body := append(append([]byte{}, head[4:]...), byte(len(exts)>>8), byte(len(exts)))
	body = append(body, exts...)
	m := append([]byte{1, byte(len(body) >> 16), byte(len(body) >> 8), byte(len(body))}, body...)
	return record(m)
}

func withExtension(t testing.TB, msg, ext []byte) []byte {
	head, exts := helloParts(t, msg)
	return rebuild(head, append(append([]byte{}, exts...), ext...))
}

// withoutSNI replaces the hello's extensions by ext alone.
func withoutSNI(t testing.TB, msg, ext []byte) []byte {
	head, _ := helloParts(t, msg)
	return rebuild(head, ext)
}

// FuzzSNIReader: the reader never panics, never reads past MaxClientHello,
// returns a prefix of its input, a name it returns is canonical, and what
// it accepts it accepts again split into other records. (The comparison
// with crypto/tls's own server is TestReadClientHelloAgreesWithTLS: a
// handshake per input starves the fuzzer.)
func FuzzSNIReader(f *testing.F) {
	good := clientHello(f, "allowed.test")
	f.Add(good)
	f.Add(withExtension(f, good[5:], serverNameExt("b.test")))
	f.Add(withoutSNI(f, good[5:], serverNameExt("x.test")))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x01, 0x01})
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		raw, sni, err := readClientHello(bufio.NewReader(bytes.NewReader(in)))
		if len(raw) > MaxClientHello || !bytes.HasPrefix(in, raw) {
			t.Fatalf("read %d bytes, not a prefix of the input", len(raw))
		}
		if err != nil {
			return
		}
		if sni != "" {
			if c, cerr := canonicalHost(sni); cerr != nil || c != sni {
				t.Fatalf("server name %q is not canonical", sni)
			}
		}
		// The same handshake message split into up to 64 records.
		var msg []byte
		for rest := raw; len(rest) >= 5; {
			n := int(rest[3])<<8 | int(rest[4])
			msg = append(msg, rest[5:5+n]...)
			rest = rest[5+n:]
		}
		var re []byte
		for step := max(len(msg)/64, 1); len(msg) > 0; {
			k := min(step, len(msg))
			re = append(re, record(msg[:k])...)
			msg = msg[k:]
		}
		if _, sni2, err := readClientHello(bufio.NewReader(bytes.NewReader(re))); len(re) <= MaxClientHello && (err != nil || sni2 != sni) {
			t.Fatalf("split into records: %q %v, whole: %q", sni2, err, sni)
		}
	})
}

// BenchmarkReadClientHello is the reader alone on crypto/tls's hello
// (about 1.5 KiB with its post-quantum key share).
func BenchmarkReadClientHello(b *testing.B) {
	hello := clientHello(b, "allowed.test")
	r := bytes.NewReader(hello)
	br := bufio.NewReader(r)
	b.SetBytes(int64(len(hello)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(hello)
		br.Reset(r)
		if _, sni, err := readClientHello(br); err != nil || sni != "allowed.test" {
			b.Fatal(sni, err)
		}
	}
}

// BenchmarkConnectTLSHello is BenchmarkConnectSequential with a real
// ClientHello as the tunnel's first flight: the broker reads and checks it
// before it forwards it; the upstream answers one byte once it has the
// whole hello.
func BenchmarkConnectTLSHello(b *testing.B) {
	hello := clientHello(b, "allowed.test")
	up := listenUpstream(b)
	defer up.Close()
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, len(hello))
				if _, err := io.ReadFull(c, buf); err == nil {
					c.Write([]byte{'p'}) //nolint:errcheck
				}
				io.Copy(io.Discard, c) //nolint:errcheck
			}()
		}
	}()
	addr, stop := benchProxy(b, testResolver{})
	defer stop()
	target := "allowed.test:" + strconv.Itoa(up.Addr().(*net.TCPAddr).Port)
	req := []byte("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n")
	want := "HTTP/1.1 200 Connection established\r\n\r\n"
	buf := make([]byte, len(want))
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != want {
			b.Fatalf("CONNECT: %q %v", buf, err)
		}
		if _, err := c.Write(hello); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf[:1]); err != nil || buf[0] != 'p' {
			b.Fatalf("answer: %q %v", buf[:1], err)
		}
		c.Close()
	}
}
