package egress

import (
	"strings"
	"testing"
)

func TestSessionSlice(t *testing.T) {
	mark := func(k Kind, id string) Entry { return Entry{Kind: k, Session: id} }
	dec := func(host string) Entry { return Entry{Kind: KindConnect, Host: host} }
	log := []Entry{
		dec("before.test"),
		mark(KindSessionStart, "a"), dec("a1.test"), mark(KindSessionEnd, "a"),
		dec("between.test"),
		mark(KindSessionStart, "b"), dec("b1.test"),
		mark(KindSessionStart, "c"), dec("bc.test"), mark(KindSessionEnd, "b"),
		dec("c1.test"),
	}
	text := func(es []Entry) string {
		var s []string
		for _, e := range es {
			if e.IsDecision() {
				s = append(s, e.Host)
			} else {
				s = append(s, string(e.Kind)+":"+e.Session)
			}
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct{ id, want string }{
		{"a", "session-start:a a1.test session-end:a"},
		{"b", "session-start:b b1.test session-start:c bc.test session-end:b"},
		{"c", "session-start:c bc.test session-end:b c1.test"}, // still running
		{LastSession, "session-start:c bc.test session-end:b c1.test"},
	} {
		got, ok := SessionSlice(log, c.id)
		if !ok || text(got) != c.want {
			t.Errorf("%s: %v %q, want %q", c.id, ok, text(got), c.want)
		}
	}
	if _, ok := SessionSlice(log, "zzz"); ok {
		t.Error("unknown session found")
	}
	if _, ok := SessionSlice(nil, LastSession); ok {
		t.Error("last of an empty log found")
	}
}
