//go:build e2e

package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sniProbe runs in the box: it opens a CONNECT tunnel through the broker
// (argv: the broker's HOST:PORT, the CONNECT target HOST:PORT), then
// starts TLS in it with the server name in argv[3] ("-" sends none, as
// clients do for an IP address; not "": an empty word may not survive the
// session's command line) and asks for the path in argv[4]. It
// prints "CONNECT <status line>", then "REFUSED <error>" when the
// handshake fails, or "TLS <status line> | <body>". Certificates are not
// checked: what is under test is the broker's decision on the server
// name, not the upstream's certificate.
const sniProbe = `import socket, ssl, sys
proxy, target, sni, path = sys.argv[1:5]
host, port = proxy.rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=30)
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
head = b""
while not head.endswith(b"\r\n\r\n"):
    b = s.recv(1)
    if not b:
        break
    head += b
status = head.split(b"\r\n", 1)[0].decode("ascii", "replace")
print("CONNECT", status)
if " 200" not in status:
    sys.exit(0)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    t = ctx.wrap_socket(s, server_hostname=None if sni == "-" else sni)
except (ssl.SSLError, OSError) as e:
    print("REFUSED", e)
    sys.exit(0)
t.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, target)).encode())
data = b""
try:
    while True:
        b = t.recv(4096)
        if not b:
            break
        data += b
except (ssl.SSLError, OSError):
    pass
print("TLS", data.split(b"\r\n", 1)[0].decode("ascii", "replace"), "|", data.rsplit(b"\r\n\r\n", 1)[-1].decode("ascii", "replace"))
`

// sniMismatch proves from inside TestHostFunnel's box that the broker
// refuses a CONNECT tunnel whose TLS server name is not the CONNECT host
// (domain fronting through an allowed name or address), and lets the same
// tunnel through with the matching name. tls is a TLS server on host
// loopback; the box's trusted layer allows 127.0.0.0/8 and
// localhost:tls.port. Each refusal ends in the broker's TLS alert
// (access denied) before any byte reaches the server, and is an
// sni-mismatch line of the egress log naming the server name. A few
// seconds on the running box.
func sniMismatch(t *testing.T, x *h, proxy string, tls *hostServer) {
	broker := strings.TrimPrefix(proxy, "http://")
	probe := func(target, sni, path string) string {
		return x.ok("run", "--", "python3", "-c", sniProbe, broker, target, sni, path)
	}
	ip, name := "127.0.0.1:"+tls.port, "localhost:"+tls.port
	for _, tc := range []struct {
		what, target, sni, path string
		refused                 bool
	}{
		{"an allowed address, another name", ip, "fronted.example.test", "/sni-ip-fronted", true},
		{"an allowed name, another name", name, "fronted.example.test", "/sni-name-fronted", true},
		{"an allowed name, the same name", name, "localhost", "/sni-name-match", false},
		{"an allowed address, no name", ip, "-", "/sni-ip-no-name", false},
		{"an allowed address, a name allowed on that port", ip, "localhost", "/sni-ip-allowed-name", false},
	} {
		got := probe(tc.target, tc.sni, tc.path)
		if !strings.HasPrefix(got, "CONNECT HTTP/1.1 200") {
			t.Errorf("%s: the CONNECT to %s was not allowed (the TLS server name is decided after it):\n%s", tc.what, tc.target, got)
			continue
		}
		switch {
		case tc.refused && (!strings.Contains(got, "\nREFUSED ") || !strings.Contains(strings.ToLower(got), "access denied")):
			t.Errorf("%s: CONNECT %s with server name %q not refused with the broker's access_denied alert:\n%s", tc.what, tc.target, tc.sni, got)
		case !tc.refused && !strings.Contains(got, "\nTLS HTTP/1.1 200 OK | HOST-REACHED "+tc.path):
			t.Errorf("%s: CONNECT %s with server name %q did not reach the server:\n%s", tc.what, tc.target, tc.sni, got)
		}
		want := 1
		if tc.refused {
			want = 0
		}
		if n := tls.count(tc.path); n != want {
			t.Errorf("%s: the TLS server got %d requests for %s, want %d", tc.what, n, tc.path, want)
		}
	}

	// The egress log: an sni-mismatch decision for each refused tunnel,
	// with the CONNECT host and the server name it asked for.
	f, err := os.Open(filepath.Join(x.home, "logs", "egress-"+x.box+".jsonl"))
	must(t, err)
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct {
			Kind, Host, Reason, SNI string
			Allowed                 bool
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Reason == "sni-mismatch" {
			if e.Allowed || e.Kind != "connect" || e.SNI != "fronted.example.test" {
				t.Errorf("an sni-mismatch line: %s", sc.Bytes())
			}
			seen[e.Host] = true
		}
	}
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if !seen[host] {
			t.Errorf("egress log: no sni-mismatch refusal of a CONNECT to %s (seen: %v)", host, seen)
		}
	}
}
