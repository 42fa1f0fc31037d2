package egress

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func TestDecisionJSONMatchesEncodingJSON(t *testing.T) {
	e := Entry{Time: time.Date(2026, 11, 30, 5, 8, 23, 123456789, time.FixedZone("x", 3600)), Box: "b-1",
		Kind: KindConnect, Host: "a.test", Port: 443, IP: "127.0.0.1", Allowed: true, Reason: ReasonAllowed}
	want, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendDecisionJSON(nil, e); string(got) != string(want) {
		t.Fatalf("fast encoding\n got %s\nwant %s", got, want)
	}
	// With the session a client named (ProxySession), as every decision
	// of a corral session has.
	ws := e
	ws.Who = &Attribution{Session: "ab12cd-3"}
	wantWho, _ := json.Marshal(ws)
	if got := appendDecisionJSON(nil, ws); !sessionOnly(ws.Who) || string(got) != string(wantWho) {
		t.Fatalf("fast encoding with a session\n got %s\nwant %s", got, wantWho)
	}
	var m map[string]any
	json.Unmarshal(want, &m) //nolint:errcheck
	for _, k := range []string{"time", "box", "kind", "host", "port", "ip", "allowed", "reason"} {
		if _, ok := m[k]; !ok {
			t.Errorf("decision line lacks %q: %s", k, want)
		}
	}
	if _, ok := m["session"]; ok {
		t.Errorf("decision line has session: %s", want)
	}
	s, _ := json.Marshal(Entry{Time: e.Time, Box: "b", Kind: KindSessionStart, Session: "s1"})
	if got := string(s); got != `{"time":"2026-11-30T05:08:23.123456789+01:00","box":"b","kind":"session-start","session":"s1"}` {
		t.Errorf("session line %s", got)
	}
}

func TestConcurrentLogWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	// Two writers on one file stand in for two processes.
	var logs []*DecisionLog
	for range 2 {
		l, err := OpenLog(path, "box1", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs = append(logs, l)
	}
	const goroutines, per = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := logs[g%2]
			for i := range per {
				host := fmt.Sprintf("h%d-%d.test", g, i)
				if i%10 == 0 {
					host = fmt.Sprintf("weird\"<host>\n%d-%d", g, i) // slow path with escaping; unique, so not aggregated
				}
				l.LogDecision(Decision{Kind: KindConnect, Host: host, Port: 443,
					IP: netip.MustParseAddr("127.0.0.1"), Reason: ReasonHostNotAllowed})
			}
		}()
	}
	wg.Wait()
	lines := readLines(t, path)
	if len(lines) != goroutines*per {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*per)
	}
	for _, l := range lines {
		var e Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil || e.Box != "box1" || e.Port != 443 {
			t.Fatalf("bad line %q: %v", l, err)
		}
	}
}

func TestReadLogAndSummarize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var sb strings.Builder
	add := func(min int, host string, port int, allowed bool) {
		r := ReasonAllowed
		if !allowed {
			r = ReasonHostNotAllowed
		}
		b, _ := json.Marshal(Entry{Time: base.Add(time.Duration(min) * time.Minute), Box: "b", Kind: KindConnect,
			Host: host, Port: port, Allowed: allowed, Reason: r})
		sb.Write(append(b, '\n'))
	}
	add(0, "old.test", 443, false) // before since
	add(1, "a.test", 443, true)
	add(2, "a.test", 443, true)
	add(3, "a.test", 443, true)
	add(4, "b.test", 443, true)
	add(5, "d.test", 443, false)
	add(6, "c.test", 22, false)
	add(7, "c.test", 22, false)
	s, _ := json.Marshal(Entry{Time: base.Add(8 * time.Minute), Box: "b", Kind: KindSessionEnd, Session: "x"})
	sb.Write(append(s, '\n'))
	sb.WriteString(`{"torn`)
	// Put the first two lines in the rotated generation.
	all := strings.SplitAfter(sb.String(), "\n")
	os.WriteFile(path+".1", []byte(strings.Join(all[:2], "")), 0o600) //nolint:errcheck
	os.WriteFile(path, []byte(strings.Join(all[2:], "")), 0o600)      //nolint:errcheck

	entries, err := ReadLog(path, base.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 8 {
		t.Fatalf("%d entries, want 8", len(entries))
	}
	got := Summarize(entries)
	want := []HostSummary{
		{Host: "c.test", Port: 22, Allowed: false, Count: 2, LastSeen: base.Add(7 * time.Minute), Reason: ReasonHostNotAllowed},
		{Host: "d.test", Port: 443, Allowed: false, Count: 1, LastSeen: base.Add(5 * time.Minute), Reason: ReasonHostNotAllowed},
		{Host: "a.test", Port: 443, Allowed: true, Count: 3, LastSeen: base.Add(3 * time.Minute), Reason: ReasonAllowed},
		{Host: "b.test", Port: 443, Allowed: true, Count: 1, LastSeen: base.Add(4 * time.Minute), Reason: ReasonAllowed},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Summarize\n got %v\nwant %v", got, want)
	}
	if e, err := ReadLog(filepath.Join(t.TempDir(), "none"), time.Time{}); err != nil || len(e) != 0 {
		t.Errorf("missing log: %v %v", e, err)
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	os.WriteFile(path, []byte(`{"kind":"connect","host":"before.test"}`+"\n"), 0o600) //nolint:errcheck
	got := make(chan Entry, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, path, func(e Entry) { got <- e }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow: %v", err)
		}
	}()
	appendLine := func(p, s string) {
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s) //nolint:errcheck
		f.Close()
	}
	// Wait until Follow is watching: keep appending probes until one arrives.
	deadline := time.After(10 * time.Second)
	for synced := false; !synced; {
		appendLine(path, `{"kind":"connect","host":"probe.test"}`+"\n")
		select {
		case e := <-got:
			if e.Host == "before.test" {
				t.Fatal("Follow re-read an existing line")
			}
			synced = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("Follow never delivered a line")
		}
	}
	// Drain extra probes.
	for drained := false; !drained; {
		select {
		case <-got:
		case <-time.After(300 * time.Millisecond):
			drained = true
		}
	}
	appendLine(path, `{"kind":"connect","host":"one.test"}`+"\n"+`{"kind":"connect","ho`)
	appendLine(path, `st":"two.test"}`+"\n")
	os.Rename(path, path+".1")                                           //nolint:errcheck
	appendLine(path+".1", `{"kind":"connect","host":"three.test"}`+"\n") // late write to the old file
	appendLine(path, `{"kind":"connect","host":"four.test"}`+"\n")
	var hosts []string
	for len(hosts) < 4 {
		select {
		case e := <-got:
			hosts = append(hosts, e.Host)
		case <-time.After(10 * time.Second):
			t.Fatalf("got only %v", hosts)
		}
	}
	if strings.Join(hosts, ",") != "one.test,two.test,three.test,four.test" {
		t.Errorf("followed %v", hosts)
	}
}

func TestFollowAllReadsWhatIsThere(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	os.WriteFile(path, []byte(`{"kind":"connect","host":"before.test"}`+"\n"), 0o600) //nolint:errcheck
	got := make(chan Entry, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go FollowAll(ctx, path, func(e Entry) { got <- e }) //nolint:errcheck
	select {
	case e := <-got:
		if e.Host != "before.test" {
			t.Errorf("first entry %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("FollowAll did not deliver the line already in the log")
	}
}

func TestDecisionLogSessions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "egress.jsonl")
	l, err := OpenLog(path, "box1", nil)
	if err != nil {
		t.Fatal(err)
	}
	l.StartSession("s1") //nolint:errcheck
	l.LogDecision(Decision{Kind: KindHTTP, Host: "a.test", Port: 80, Allowed: true, Reason: ReasonAllowed})
	l.EndSession("s1") //nolint:errcheck
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	var kinds []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, string(e.Kind)+":"+e.Session)
	}
	if strings.Join(kinds, ",") != "session-start:s1,http:,session-end:s1" {
		t.Errorf("kinds %v", kinds)
	}
}

// TestHeldOutcomeLines: the outcome of a hold carries held_ms, is never
// folded into a denial count, encodes as encoding/json would, and counts
// once in Summarize (its hold's start was counted).
func TestHeldOutcomeLines(t *testing.T) {
	var out memAppender
	l := NewDecisionLog("b-1", &out, nil)
	t0 := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	deny := Decision{Time: t0, Kind: KindConnect, Host: "h.test", Port: 443, Reason: ReasonHostNotAllowed}
	l.LogDecision(deny) // the hold begins
	held := deny
	held.Time, held.Held = t0.Add(30*time.Second), 30*time.Second
	l.LogDecision(held) // and ends denied
	allowed := Decision{Time: t0.Add(31 * time.Second), Kind: KindConnect, Host: "h.test", Port: 443,
		Allowed: true, Reason: ReasonAllowed, Held: 1500 * time.Microsecond}
	l.LogDecision(allowed)
	l.Flush(true)
	var es []Entry
	for _, line := range out.lines() {
		var e Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		es = append(es, e)
	}
	if len(es) != 3 || es[0].HeldMS != 0 || es[1].HeldMS != 30000 || es[1].Count != 0 || es[2].HeldMS != 1 || !es[2].Allowed {
		t.Fatalf("entries %+v", es)
	}
	if !strings.Contains(out.lines()[1], `"held_ms":30000`) || es[1].Held() != 30*time.Second {
		t.Errorf("held line %s", out.lines()[1])
	}
	sum := Summarize(es)
	if len(sum) != 2 || sum[0].Allowed || sum[0].Count != 1 || !sum[1].Allowed || sum[1].Count != 1 {
		t.Errorf("summary %+v, want one denial and one admission", sum)
	}
	// Alone (its start rotated away), a held denial still counts.
	if s := Summarize(es[1:2]); len(s) != 1 || s[0].Count != 1 {
		t.Errorf("summary of a lone held denial %+v", s)
	}
}

// memAppender keeps the JSON lines appended to it.
type memAppender struct {
	mu sync.Mutex
	ls []string
}

func (m *memAppender) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ls = append(m.ls, string(b))
	return nil
}

func (m *memAppender) lines() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.ls...)
}

// FuzzDecisionJSON: whenever the fast path is taken, its line is exactly
// json.Marshal's; every field of Entry is set from the fuzzer, so a field
// the fast encoder does not write can never be dropped silently.
func FuzzDecisionJSON(f *testing.F) {
	f.Add("a.test", "b-1", "127.0.0.1", string(ReasonAllowed), "", "", "", 443, 1, int64(0), true, uint8(0))
	f.Add("a.test", "b-1", "127.0.0.1", string(ReasonSNIMismatch), "ab12", "", "fronted.example.test", 443, 0, int64(0), false, uint8(1))
	f.Fuzz(func(t *testing.T, host, box, ip, reason, session, why, sni string, port, count int, held int64, allowed bool, kind uint8) {
		kinds := []Kind{KindConnect, KindHTTP, KindRequest, KindSessionStart}
		e := Entry{Time: time.Date(2026, 12, 2, 17, 9, 41, 817543007, time.UTC), Box: box, Kind: kinds[int(kind)%len(kinds)],
			Host: host, Port: port, IP: ip, Allowed: allowed, Reason: Reason(reason), Count: count, HeldMS: held, Why: why, SNI: sni}
		if session != "" {
			e.Who = &Attribution{Session: session}
		}
		if !fastEncodable(e) {
			return
		}
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendDecisionJSON(nil, e); string(got) != string(want) {
			t.Fatalf("fast encoding of %+v\n got %s\nwant %s", e, got, want)
		}
	})
}

// An SNI refusal's line names the server name it asked for (the fast
// path once dropped it).
func TestDecisionLogKeepsSNI(t *testing.T) {
	e := Entry{Time: time.Now(), Box: "b", Kind: KindConnect, Host: "localhost", Port: 443, IP: "127.0.0.1",
		Reason: ReasonSNIMismatch, SNI: "fronted.example.test"}
	if fastEncodable(e) {
		t.Fatal("an entry with an SNI took the fast path, which does not write it")
	}
	b, _ := json.Marshal(e)
	if !strings.Contains(string(b), `"sni":"fronted.example.test"`) {
		t.Fatalf("line %s", b)
	}
}
