package egress

import (
	"encoding/base64"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/display"
)

func TestParseBoxRequest(t *testing.T) {
	ok := []struct {
		body string
		want BoxRequest
	}{
		{"what=egress&target=API.Example.test.&why=fetch+deps",
			BoxRequest{What: RequestEgress, Entry: "api.example.test", Why: "fetch deps"}},
		{"what=egress&target=api.example.test:8443&why=x&exe=node&pid=42&chain=npm+%3C+bash&session=tests",
			BoxRequest{What: RequestEgress, Entry: "api.example.test:8443", Why: "x",
				Who: Attribution{Exe: "node", PID: 42, Chain: "npm < bash", Session: "tests"}}},
		{"what=port&target=3000&why=dev+server", BoxRequest{What: RequestPort, Port: 3000, Why: "dev server"}},
		{"what=egress&target=b%C3%BCcher.test&why=%1B%5B2J++clear%0Ascreen%E2%80%AE",
			BoxRequest{What: RequestEgress, Entry: "xn--bcher-kva.test", Why: "[2J clear screen"}},
	}
	for _, c := range ok {
		got, err := ParseBoxRequest([]byte(c.body))
		if err != nil || got != c.want {
			t.Errorf("ParseBoxRequest(%q) = %+v, %v; want %+v", c.body, got, err, c.want)
		}
	}
	bad := []string{
		"",
		"what=egress&target=a.example.test", // no reason
		"what=egress&target=a.example.test&why=%00%1B%E2%80%AE+",   // reason empty once cleaned
		"what=egress&target=*.example.test&why=x",                  // wildcard
		"what=egress&target=a.example.test:*&why=x",                // any port
		"what=egress&target=10.0.0.0/8&why=x",                      // range
		"what=egress&target=10.0.0.1&why=x",                        // IP literal
		"what=egress&target=http://a.example.test/&why=x",          // URL
		"what=egress&target=a.example.test:0&why=x",                // port 0
		"what=egress&target=a.example.test:65536&why=x",            // port too large
		"what=port&target=0&why=x", "what=port&target=65536&why=x", // port range
		"what=port&target=080&why=x", "what=port&target=+80&why=x", // not plain digits
		"what=egress&what=port&target=80&why=x",                              // repeated key
		"what=egress&target=a.example.test&why=x&scope=always",               // unknown key
		"what=grant&target=a.example.test&why=x",                             // unknown what
		"what=egress&target=a.example.test&why=x&pid=-1",                     // bad pid
		"what=egress&target=a.example.test&why=x&pid=0012",                   // leading zero
		"what=egress&target=a.example.test&why=%ZZ",                          // bad escape
		"what=egress&target=a.example.test&why=" + strings.Repeat("a", 5000), // too large
	}
	for _, b := range bad {
		if got, err := ParseBoxRequest([]byte(b)); err == nil {
			t.Errorf("ParseBoxRequest(%q) = %+v, want an error", b, got)
		}
	}
}

func TestCleanText(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{"  a \t\n b  ", 10, "a b"},
		{"\x1b]0;title\x07x", 20, "]0;titlex"},
		{"abcdef", 4, "abc…"},
		{"abcd", 4, "abcd"},
		{"ab\xffcd", 10, "abcd"},
		{"a\u202eb\u200bc", 10, "abc"},
		{"日本語テキスト", 4, "日本語…"},
	} {
		if got := CleanText(c.in, c.max); got != c.want {
			t.Errorf("CleanText(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// checkClean asserts what every cleaned field must be.
func checkClean(t *testing.T, field, s string, limit int) {
	t.Helper()
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > limit || s != strings.TrimSpace(s) || strings.Contains(s, "  ") {
		t.Fatalf("%s %q: not clean (limit %d)", field, s, limit)
	}
	for _, r := range s {
		if display.Unsafe(r) {
			t.Fatalf("%s %q: holds unsafe rune %U", field, s, r)
		}
	}
}

// checkRequest asserts the properties of every accepted request.
func checkRequest(t *testing.T, r BoxRequest) {
	t.Helper()
	switch r.What {
	case RequestEgress:
		e, err := ParseAllowEntry(r.Entry)
		if err != nil || e.String() != r.Entry || e.Wild || e.AnyPort || e.IsRange() || r.Port != 0 {
			t.Fatalf("egress request %+v: entry not one canonical host (%v)", r, err)
		}
	case RequestPort:
		if r.Port < 1 || r.Port > 65535 || r.Entry != "" {
			t.Fatalf("port request %+v", r)
		}
	default:
		t.Fatalf("request %+v: what %q", r, r.What)
	}
	if r.Why == "" {
		t.Fatalf("request %+v: empty reason", r)
	}
	checkClean(t, "why", r.Why, MaxWhy)
	checkClean(t, "exe", r.Who.Exe, MaxWhoField)
	checkClean(t, "chain", r.Who.Chain, MaxChain)
	checkClean(t, "session", r.Who.Session, MaxWhoField)
	if r.Who.PID < 0 {
		t.Fatalf("pid %d", r.Who.PID)
	}
	checkClean(t, "attribution", r.Who.String(), MaxWhoField*2+MaxChain+40)
}

// Property: whatever runes a box puts in the fields, an accepted request
// is one canonical host or port, and every string in it is clean and
// capped; its key is what it asked for.
func TestBoxRequestProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 1))
	pieces := []string{"a", "Z", " ", "\t", "\n", "\x00", "\x1b[31m", "\x7f", "\u0085", "\u202e", "\u200b", "\ufeff",
		"\xff", "\xc3", "é", "日", "\U0001F600", "\ue000", "…", "%", "&", "=", "+", "\u2028", "\U000E0041"}
	gen := func(n int) string {
		var b strings.Builder
		for range r.IntN(n) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	hosts := []string{"a.example.test", "A.EXAMPLE.test.", "b.example.test:8443", "bücher.test", "x_y.example.test", "*.example.test", "1.2.3.4", "h:0"}
	accepted := 0
	for range 5000 {
		v := url.Values{}
		if r.IntN(2) == 0 {
			v.Set("what", "egress")
			v.Set("target", hosts[r.IntN(len(hosts))])
		} else {
			v.Set("what", "port")
			v.Set("target", []string{"1", "3000", "65535", "0", "99999", "80x"}[r.IntN(6)])
		}
		v.Set("why", gen(300))
		if r.IntN(2) == 0 {
			v.Set("exe", gen(100))
			v.Set("chain", gen(250))
			v.Set("session", gen(100))
		}
		req, err := ParseBoxRequest([]byte(v.Encode()))
		if err != nil {
			continue
		}
		accepted++
		checkRequest(t, req)
		if req.What == RequestEgress && req.Key() != req.Entry || req.What == RequestPort && !strings.HasPrefix(req.Key(), "port ") {
			t.Fatalf("key %q of %+v", req.Key(), req)
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of 5000 accepted: the generator tests nothing", accepted)
	}
}

func FuzzParseBoxRequest(f *testing.F) {
	for _, s := range []string{
		"what=egress&target=api.example.test&why=deps",
		"what=port&target=3000&why=dev&exe=node&pid=7&chain=a+%3C+b&session=s",
		"what=egress&target=%2A.example.test&why=x",
		"what=egress&target=a.example.test&why=%1B%5B2J%E2%80%AE",
		"what=egress&what=egress", "=&&=", "%", "what=port&target=0&why=x",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseBoxRequest(body)
		if err != nil {
			return
		}
		checkRequest(t, r)
	})
}

// The inbox's token bucket: Burst at once, then one per Every; at most
// MaxPending waiting; a denial settles a request and a repeat replaces it.
func TestRequestInboxBucket(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	in := NewRequestInbox(RequestConfig{Burst: 2, Every: 10 * time.Second, MaxPending: 3, Now: func() time.Time { return now }})
	req := func(h string) BoxRequest { return BoxRequest{What: RequestEgress, Entry: h, Why: "x"} }
	if in.File(req("a.test")) != nil || in.File(req("b.test")) != nil {
		t.Fatal("burst refused")
	}
	if err := in.File(req("c.test")); err != ErrRequestRate {
		t.Fatalf("past the burst: %v", err)
	}
	now = now.Add(10 * time.Second)
	if err := in.File(req("c.test")); err != nil {
		t.Fatalf("after a refill: %v", err)
	}
	now = now.Add(20 * time.Second)
	if err := in.File(req("d.test")); err != ErrRequestFull {
		t.Fatalf("past MaxPending: %v", err)
	}
	if err := in.File(req("a.test")); err != nil {
		t.Fatalf("a repeat of a pending request: %v", err)
	}
	if got := in.asked(KindConnect, Authority{Host: "a.test", Port: 443}); got != "a.test" {
		t.Fatalf("asked(a.test:443) = %q", got)
	}
	if got := in.asked(KindConnect, Authority{Host: "a.test", Port: 22}); got != "" {
		t.Fatalf("asked(a.test:22) = %q: the request was for 80 and 443", got)
	}
	in.Settle(func(r BoxRequest) bool { return r.Entry == "a.test" })
	if in.stillPending("a.test") || len(in.Pending()) != 2 {
		t.Fatalf("after Settle: %+v", in.Pending())
	}
	now = now.Add(time.Hour)
	if len(in.Pending()) != 0 {
		t.Fatalf("after PendingFor: %+v", in.Pending())
	}
}

func TestProxySession(t *testing.T) {
	basic := func(s string) http.Header {
		return http.Header{"Proxy-Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(s))}}
	}
	for _, c := range []struct {
		h    http.Header
		want string
	}{
		{basic("session-ab12cd:x"), "ab12cd"},
		{basic("session-ab12cd"), "ab12cd"},
		{basic("session-doctor-ab12:"), "doctor-ab12"},
		{basic("session-:x"), ""},
		{basic("session-a\x1bb:x"), ""},
		{basic("session-" + strings.Repeat("a", 65) + ":x"), ""},
		{basic("user:secret"), ""},
		{http.Header{"Proxy-Authorization": {"Bearer session-ab"}}, ""},
		{http.Header{"Proxy-Authorization": {"Basic !!!"}}, ""},
		{http.Header{}, ""},
	} {
		if got := ProxySession(c.h); got.Session != c.want || got.Exe != "" || got.PID != 0 {
			t.Errorf("ProxySession(%v) = %+v, want session %q", c.h, got, c.want)
		}
	}
}
