package egress

import (
	"reflect"
	"testing"
	"time"
)

// TestPropose builds a proposal from a learning window's log: only
// learned decisions inside the window count, grouped by registrable
// domain (the Public Suffix List's, so a.github.io and b.github.io are
// two domains), with counts (aggregated lines included), the sessions
// open at the time, and ports other than 80/443 kept in the entry.
func TestPropose(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	learned := func(m int, host string, port int) Entry {
		return Entry{Time: at(m), Box: "b", Kind: KindConnect, Host: host, Port: port, Allowed: true, Reason: ReasonLearning}
	}
	entries := []Entry{
		learned(-5, "before.example.test", 443), // before the window
		{Time: at(0), Kind: KindSessionStart, Session: "s1"},
		learned(1, "api.example.test", 443),
		learned(2, "cdn.example.test", 8443),
		{Time: at(3), Kind: KindSessionStart, Session: "s2"},
		learned(4, "api.example.test", 443),
		{Time: at(5), Kind: KindConnect, Host: "listed.other.test", Port: 443, Allowed: true, Reason: ReasonAllowed},
		{Time: at(5), Kind: KindConnect, Host: "denied.other.test", Port: 443, Reason: ReasonPrivateIP},
		{Time: at(6), Kind: KindSessionEnd, Session: "s1"},
		learned(7, "one.github.io", 443),
		learned(8, "two.github.io", 80),
		{Time: at(9), Kind: KindSessionEnd, Session: "s2"},
		func() Entry { e := learned(10, "localhost", 443); e.Count = 3; return e }(),
		learned(11, "bad host", 443), // never logged as learned; left out
		learned(40, "after.example.test", 443),
	}
	got := Propose(entries, at(0), at(30))
	want := []Proposal{
		{Domain: "example.test", Count: 3, Sessions: []string{"s1", "s2"}, Learned: []Learned{
			{Entry: "api.example.test", Count: 2, Last: at(4), Sessions: []string{"s1", "s2"}},
			{Entry: "cdn.example.test:8443", Count: 1, Last: at(2), Sessions: []string{"s1"}},
		}},
		{Domain: "localhost", Count: 3, Sessions: []string{}, Learned: []Learned{{Entry: "localhost", Count: 3, Last: at(10), Sessions: []string{}}}},
		{Domain: "one.github.io", Count: 1, Sessions: []string{"s2"}, Learned: []Learned{{Entry: "one.github.io", Count: 1, Last: at(7), Sessions: []string{"s2"}}}},
		{Domain: "two.github.io", Count: 1, Sessions: []string{"s2"}, Learned: []Learned{{Entry: "two.github.io", Count: 1, Last: at(8), Sessions: []string{"s2"}}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("proposal:\n%+v\nwant:\n%+v", got, want)
	}
	if e := ProposedEntries(got); !reflect.DeepEqual(e, []string{"api.example.test", "cdn.example.test:8443", "localhost", "one.github.io", "two.github.io"}) {
		t.Errorf("entries %v", e)
	}
	if p := Propose(nil, at(0), at(30)); len(p) != 0 {
		t.Errorf("empty log: %+v", p)
	}
}
