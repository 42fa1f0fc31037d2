package audit

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rfc5424 is the header of one message as Forwarder writes it.
var rfc5424 = regexp.MustCompile(`^<(\d+)>1 \S+ laptop corral - (\S+) - (\{.*\})$`)

func checkSyslog(t *testing.T, msg string, kind Kind, pri int) {
	t.Helper()
	m := rfc5424.FindStringSubmatch(msg)
	if m == nil {
		t.Fatalf("not an RFC 5424 message: %q", msg)
	}
	if m[1] != strconv.Itoa(pri) || m[2] != string(kind) {
		t.Errorf("PRI %s MSGID %s, want %d %s", m[1], m[2], pri, kind)
	}
	var o map[string]any
	if err := json.Unmarshal([]byte(m[3]), &o); err != nil || o["class_uid"] == nil {
		t.Errorf("message is no OCSF event: %v %q", err, m[3])
	}
}

// TestForwardToCollectors: a syslog daemon over UDP and TCP and an HTTP
// collector, all on 127.0.0.1, receive the events Follow reads from the
// log, the ones already there and the ones appended.
func TestForwardToCollectors(t *testing.T) {
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	posts := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s", r.Method, r.Header.Get("Content-Type"))
		}
		posts <- string(b)
	}))
	defer srv.Close()

	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := Append(path, Event{Kind: KindStart, Box: "b"}); err != nil {
		t.Fatal(err)
	}
	fws := []*Forwarder{
		{Scheme: "syslog+udp", Addr: udp.LocalAddr().String(), OCSF: true, Host: "laptop"},
		{Scheme: "syslog+tcp", Addr: tcp.Addr().String(), OCSF: true, Host: "laptop"},
		{Scheme: "http", URL: srv.URL + "/ingest", OCSF: true, Host: "laptop"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		done <- Follow(ctx, path, Filter{}, 20*time.Millisecond, func(ev Event) error {
			for _, f := range fws {
				if err := f.Send(context.Background(), ev); err != nil {
					t.Error(err)
				}
			}
			return nil
		})
	}()
	conn, err := tcp.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tr := bufio.NewReader(conn)
	readTCP := func() string {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, err := tr.ReadString(' ')
		if err != nil {
			t.Fatal(err)
		}
		l, _ := strconv.Atoi(strings.TrimSpace(n))
		b := make([]byte, l)
		if _, err := io.ReadFull(tr, b); err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readUDP := func() string {
		udp.SetReadDeadline(time.Now().Add(5 * time.Second))
		b := make([]byte, 65536)
		n, _, err := udp.ReadFrom(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	}
	readHTTP := func() string {
		select {
		case p := <-posts:
			return p
		case <-time.After(5 * time.Second):
			t.Fatal("no POST")
		}
		return ""
	}
	// The event already in the log (lifecycle: informational, 13*8+6).
	checkSyslog(t, readUDP(), KindStart, 110)
	checkSyslog(t, readTCP(), KindStart, 110)
	if p := readHTTP(); !strings.Contains(p, `"class_uid":6003`) {
		t.Errorf("POST %s", p)
	}
	// An event appended while following (a denial: warning, 13*8+4).
	if err := Append(path, Event{Kind: KindEgressDenied, Box: "b", Fields: map[string]any{"host": "evil.example", "port": 443}}); err != nil {
		t.Fatal(err)
	}
	checkSyslog(t, readUDP(), KindEgressDenied, 108)
	checkSyslog(t, readTCP(), KindEgressDenied, 108)
	if p := readHTTP(); !strings.Contains(p, `"class_uid":4001`) || !strings.Contains(p, `"hostname":"evil.example"`) {
		t.Errorf("POST %s", p)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, f := range fws {
		f.Close()
	}
}

func TestForwardCorralFormat(t *testing.T) {
	f := &Forwarder{}
	b, err := f.encode(Event{Time: time.Unix(0, 0).UTC(), Kind: KindStop, Box: "b"})
	if err != nil || !strings.HasPrefix(string(b), `{"schema":"corral.audit-event/v1","time":`) {
		t.Errorf("%s %v", b, err)
	}
}
