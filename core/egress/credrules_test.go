package egress

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/quick"
)

// TestCredentialRulesThroughBroker: a git token usable for org/repo only,
// read-only, through the real broker: fetches of org/repo reach the
// upstream; a push (either of its requests), another repository and a
// write method are refused with 403 and logged as rule refusals naming
// the credential.
func TestCredentialRulesThroughBroker(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	rules := &CredentialRules{Paths: []string{"/org/repo", "/org/repo.git"}, ReadOnly: true, Git: true}
	p, cl := startCredProxy(t, []Credential{{Name: "git", Upstream: up.srv.URL + "/base", Header: HeaderBasic,
		Secret: staticSecret("ghp_x"), RootCAs: up.pool(), Rules: rules}})
	do := func(method, rest string) (int, string) {
		t.Helper()
		head := "Content-Length: 0\r\n\r\n"
		if method == "POST" {
			// git's fetch request as git sends it (issue 35: read_only
			// knows it by its protocol, not by its path)
			head = "Content-Type: " + UploadPackType + "\r\nContent-Length: 4\r\n\r\n0000"
		}
		resp, body := rawRequest(t, p.addr, method+" /corral/credential/"+p.tok+"/git"+rest+" HTTP/1.1\r\nHost: 192.168.5.4:4242\r\n"+head)
		return resp.StatusCode, body
	}
	for _, ok := range []struct{ method, rest string }{
		{"GET", "/org/repo.git/info/refs?service=git-upload-pack"},
		{"POST", "/org/repo.git/git-upload-pack"},
		{"GET", "/org/repo/info/refs?service=git-upload-pack"},
		{"GET", "/org/repo"},
	} {
		if status, body := do(ok.method, ok.rest); status != 200 {
			t.Errorf("%s %s = %d %q, want it forwarded", ok.method, ok.rest, status, body)
		}
	}
	forwarded := len(up.all())
	for _, bad := range []struct{ method, rest, why string }{
		{"GET", "/org/repo.git/info/refs?service=git-receive-pack", "push"},
		{"GET", "/org/repo.git/info/refs?service=git%2Dreceive%2Dpack", "push"},
		{"POST", "/org/repo.git/git-receive-pack", "push"},
		{"POST", "/org/repo.git/git-receive-p%61ck", "push"},
		{"POST", "/org/repo.git/GIT-RECEIVE-PACK", "push"},
		{"GET", "/org/repo.git/reCeive-pACk", "push"}, // a variant of the service name, in any segment
		{"GET", "/org/other.git/info/refs?service=git-upload-pack", "outside"},
		{"GET", "/org/repository/info/refs", "outside"},
		{"GET", "/org/rep%6f/../other/info/refs", "clean"},
		{"DELETE", "/org/repo", "not a read"},
		{"POST", "/org/repo/issues", "not a read"},
	} {
		status, body := do(bad.method, bad.rest)
		if status < 400 || status == 200 {
			t.Errorf("%s %s = %d, want refused", bad.method, bad.rest, status)
		}
		if status == http.StatusForbidden && !strings.Contains(body, bad.why) {
			t.Errorf("%s %s: body %q does not say %q", bad.method, bad.rest, body, bad.why)
		}
	}
	if n := len(up.all()); n != forwarded {
		t.Errorf("the upstream got %d refused requests", n-forwarded)
	}
	ev := cl.all(15)
	rule := 0
	for _, e := range ev {
		if e.Refusal == RefusedRule {
			rule++
			if e.Name != "git" || e.Session != "s1" || e.Status != http.StatusForbidden || e.Method == "" {
				t.Errorf("rule refusal logged as %+v", e)
			}
		}
	}
	if rule != 10 { // the unclean path is refused before the rules, as a path
		t.Errorf("%d rule refusals logged, want 10: %+v", rule, ev)
	}
}

func TestCredentialRulesMethods(t *testing.T) {
	r := &CredentialRules{Methods: []string{"GET", "POST"}, Paths: []string{"/v1/messages"}}
	for _, tc := range []struct {
		method, rest string
		h            http.Header
		ok           bool
	}{
		{"POST", "/v1/messages", nil, true},
		{"POST", "/v1/messages/batches", nil, true},
		{"GET", "/v1/models", nil, false},
		{"PUT", "/v1/messages", nil, false},
		{"POST", "/v1/messages", http.Header{"X-Http-Method-Override": {"DELETE"}}, false},
	} {
		if got := judgeRules(r, tc.method, tc.h, tc.rest, ""); (got == "") != tc.ok {
			t.Errorf("%s %s %v: %q, want allowed %v", tc.method, tc.rest, tc.h, got, tc.ok)
		}
	}
	if got := judgeRules(nil, "DELETE", nil, "/x", ""); got != "" {
		t.Errorf("no rules refused: %q", got)
	}
}

func TestCredentialRulesValidate(t *testing.T) {
	for _, bad := range []CredentialRules{
		{Methods: []string{"get"}},
		{Methods: []string{"GET", "GET"}},
		{Methods: []string{"TRACE"}},
		{Paths: []string{"org/repo"}},
		{Paths: []string{"/org/../repo"}},
		{Paths: []string{"/org//repo"}},
		{Paths: []string{"/org/%72epo"}},
		{Paths: []string{"/org/repo?x"}},
		{Paths: []string{"/org/re po"}},
		{Paths: []string{"/a", "/a"}},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
	good := CredentialRules{Methods: []string{"GET", "HEAD"}, Paths: []string{"/", "/org/repo/", "/org/repo.git"}, ReadOnly: true}
	if err := good.Validate(); err != nil {
		t.Error(err)
	}
	if _, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{{Name: "a", Upstream: "https://up.test", Header: HeaderAPIKey,
		Secret: staticSecret("x"), Rules: &CredentialRules{Paths: []string{"x"}}}}}); err == nil {
		t.Error("the broker took a credential with a bad rule")
	}
}

// TestCredentialRulesPathProperty: whatever path a box sends, if the
// broker's path check (credentialRest) and the rules accept it, then the
// path the upstream decodes is below an allowed prefix on a segment
// boundary, and is no push when read-only.
func TestCredentialRulesPathProperty(t *testing.T) {
	rules := &CredentialRules{Paths: []string{"/org/repo"}, ReadOnly: true}
	alphabet := []string{"/", "org", "repo", "repo.git", ".", "..", "%2e", "%2E", "%2f", "%2F", "%5c", "%", "%6f", "%25",
		"git-receive-pack", "git-upload-pack", "info", "refs", "\\", "//", "x", "O", "%00", "%0a", "?"}
	f := func(picks []uint8, method bool) bool {
		var b strings.Builder
		b.WriteString("/")
		for _, p := range picks {
			b.WriteString(alphabet[int(p)%len(alphabet)])
		}
		raw := b.String()
		pathPart, query, _ := strings.Cut(raw, "?")
		_, _, rest, err := credentialRest("git" + pathPart)
		if err != nil {
			return true
		}
		m := "GET"
		if method {
			m = "POST"
		}
		if judgeRules(rules, m, http.Header{"Content-Type": {UploadPackType}}, rest, query) != "" {
			return true
		}
		u, err := url.Parse("https://up.test/base" + rest + "?" + query)
		if err != nil {
			return true // the broker refuses it later ("bad path")
		}
		dec := strings.TrimPrefix(u.Path, "/base")
		if !pathUnder(dec, "/org/repo") || strings.Contains(strings.ToLower(dec), "receive-pack") ||
			strings.Contains(strings.ToLower(u.Query().Get("service")), "receive-pack") {
			t.Logf("allowed %s %q (upstream path %q)", m, raw, dec)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

// FuzzCredentialRules: no input panics; an allowed request's decoded path
// is below an allowed prefix and, read-only, holds no push.
func FuzzCredentialRules(f *testing.F) {
	for _, s := range []string{"/org/repo/info/refs", "/org/repo/git-receive-pack", "/org/rep%6f/x", "/org/repo%2f..", "/org/repo/../x"} {
		f.Add(s, "service=git-upload-pack", "POST")
	}
	rules := &CredentialRules{Methods: []string{"GET", "POST"}, Paths: []string{"/org/repo"}, ReadOnly: true}
	f.Fuzz(func(t *testing.T, p, query, method string) {
		_, _, rest, err := credentialRest("git" + p)
		if err != nil {
			return
		}
		if judgeRules(rules, method, nil, rest, query) != "" {
			return
		}
		dec, err := url.PathUnescape(rest)
		if err != nil || !pathUnder(dec, "/org/repo") || strings.Contains(strings.ToLower(dec), "receive-pack") {
			t.Fatalf("allowed %s %q -> %q", method, rest, dec)
		}
		if method != "GET" && method != "POST" {
			t.Fatalf("allowed method %q", method)
		}
	})
}

// judgeRules is r's verdict on a request without a body, read as admit
// reads it ("path: ..." when the canonical reading refuses the path).
func judgeRules(r *CredentialRules, method string, h http.Header, raw, query string) string {
	dec, esc, err := canonicalPath(raw)
	if err != nil {
		return "path: " + err.Error()
	}
	why, _ := r.permit(canonicalRequest{method: method, path: dec, escaped: esc, rawQuery: query, header: h})
	return why
}
