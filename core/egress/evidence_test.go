package egress

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repeated denials of one destination are one line per interval with a
// count; malformed requests are one destination whatever their text; the
// request text in a line is capped.
func TestDenialsAggregated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	l, err := OpenLog(path, "box1", nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 1000 {
		at := now.Add(time.Duration(i) * time.Millisecond)
		l.LogDecision(Decision{Time: at, Kind: KindConnect, Host: "evil.test", Port: 443, Reason: ReasonHostNotAllowed})
		l.LogDecision(Decision{Time: at, Kind: KindConnect, Host: fmt.Sprintf("junk%d %s", i, strings.Repeat("x", 1000)), Reason: ReasonMalformedAuthority})
	}
	l.LogDecision(Decision{Time: now, Kind: KindConnect, Host: "ok.test", Port: 443, Allowed: true, Reason: ReasonAllowed})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	es, err := ReadLog(path, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 5 {
		t.Fatalf("%d lines, want 5 (first + count for each of 2 destinations, 1 allowed): %+v", len(es), es)
	}
	total := map[string]int{}
	for _, e := range es {
		if len(e.Host) > MaxLoggedHost {
			t.Errorf("host of %d bytes logged", len(e.Host))
		}
		total[string(e.Reason)] += e.N()
	}
	if total["host-not-allowed"] != 1000 || total["malformed-authority"] != 1000 || total["allowed"] != 1 {
		t.Fatalf("counts %v", total)
	}
	for _, s := range Summarize(es) {
		if s.Host == "evil.test" && s.Count != 1000 {
			t.Errorf("Summarize count %d, want 1000", s.Count)
		}
	}
}

// A broker flooded with malformed requests and denials of ever new hosts,
// enough to rotate its log many times, keeps every earlier allowed decision
// readable by ReadLog (what `corral egress` shows).
func TestFloodKeepsAllowedDecisions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	dl, err := OpenLogSize(path, "box1", 32<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dl.Close()
	ep := portOf(t, echoServer(t))
	p := startProxy(t, benchEntries, []string{"127.0.0.0/8"}, func(c *Config) { c.Log = dl })
	const allowed = 20
	for i := range allowed {
		target := fmt.Sprintf("allowed.test:%s", ep)
		if i%2 == 1 {
			target = fmt.Sprintf("s%d.wild.test:%s", i, ep)
		}
		status, c, _, _ := rawConnect(t, p.addr, target)
		if status != 200 {
			t.Fatalf("allowed CONNECT %s: %d", target, status)
		}
		c.Close()
	}
	// The flood: malformed request lines, malformed targets, and denials of
	// distinct names (each a line of its own).
	for i := range 3000 {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(c, "CONNECT bad\x01target%d%s HTTP/1.1\r\n\r\n", i, strings.Repeat("A", 200))
		case 1:
			fmt.Fprintf(c, "CONNECT denied%d.example:443 HTTP/1.1\r\n\r\n", i)
		default:
			fmt.Fprintf(c, "GARBAGE %d\r\n\r\n", i)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		io.Copy(io.Discard, c)                             //nolint:errcheck
		c.Close()
	}
	es, err := ReadLog(path, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	got, denied := 0, 0
	for _, e := range es {
		if e.Allowed {
			got++
		} else {
			denied += e.N()
		}
	}
	if got != allowed {
		t.Fatalf("%d allowed decisions readable after the flood, want %d", got, allowed)
	}
	if m, _ := filepath.Glob(path + "*"); len(m) < 3 {
		t.Fatalf("log never rotated (files %v)", m)
	}
	t.Logf("after the flood: %d lines readable, %d denials in them", len(es), denied)
}
