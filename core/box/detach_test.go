package box

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseGuestSessions(t *testing.T) {
	in := "claude claude 1700000000 1 1700000100\n" +
		"run-ab12cd  1700000001 0 1700000002\n" + // no agent option set
		"Evil\x1b[2J shell 1 0 1\n" + // not a session name
		"x shell -1 0 1\n" + // negative time
		"y shell 1 0\n" + // missing field
		"z sh ell 1 0 1\n" + // extra field
		"../etc shell 1 0 1\n" +
		""
	got := ParseGuestSessions("web-1", []byte(in))
	want := []GuestSession{
		{Box: "web-1", Name: "claude", Agent: "claude", Created: time.Unix(1700000000, 0), Attached: 1, Activity: time.Unix(1700000100, 0)},
		{Box: "web-1", Name: "run-ab12cd", Agent: "", Created: time.Unix(1700000001, 0), Attached: 0, Activity: time.Unix(1700000002, 0)},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	many := strings.Repeat("a shell 1 0 1\n", 1000)
	if n := len(ParseGuestSessions("b", []byte(many))); n != maxGuestSessions {
		t.Errorf("%d sessions kept, cap %d", n, maxGuestSessions)
	}
}

func FuzzParseGuestSessions(f *testing.F) {
	f.Add([]byte("claude claude 1700000000 1 1700000100\n"))
	f.Add([]byte("a  1 0 1\nb x 2 3 4"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, g := range ParseGuestSessions("box", b) {
			if CheckSessionName(g.Name) != nil || !agentNameRe().MatchString(g.Agent) || g.Attached < 0 || !utf8.ValidString(g.Name) {
				t.Fatalf("accepted %+v", g)
			}
		}
	})
}

func TestCheckSessionName(t *testing.T) {
	for _, ok := range []string{"claude", "run-ab12cd", "a", "0", strings.Repeat("a", 32)} {
		if err := CheckSessionName(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "A", "a b", "a.b", "a:b", "=a", strings.Repeat("a", 33), "a\n"} {
		if CheckSessionName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
