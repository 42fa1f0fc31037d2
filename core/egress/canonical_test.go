package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/cgi"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// How servers behind an upstream read a request, for the differential
// test: each reading is one a real server makes, and the rules must hold
// against all of them.

// servletPath reads a raw path as a Java servlet container does: every
// segment's ";params" dropped, decoded once, then ".." resolved.
func servletPath(raw string) string {
	segs := strings.Split(raw, "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		segs[i] = s
	}
	p := strings.Join(segs, "/")
	if d, err := url.PathUnescape(p); err == nil {
		p = d
	}
	return cleanKeepSlash(p)
}

// lenientPath reads a raw path as the loosest servers do: decoded until
// nothing changes, "\" as "/", full-width and one-dot-leader characters
// folded to ASCII (Unicode normalisation), ";params" dropped, trailing dots
// and spaces of a segment dropped (Windows), then ".." resolved.
func lenientPath(raw string) string {
	p := raw
	for range 5 {
		d, err := url.PathUnescape(p)
		if err != nil || d == p {
			break
		}
		p = d
	}
	var b strings.Builder
	for _, r := range p {
		switch {
		case r >= 0xff01 && r <= 0xff5e:
			r -= 0xfee0
		case r == 0x2024 || r == 0x3002:
			r = '.'
		case r == '\\':
			r = '/'
		}
		b.WriteRune(r)
	}
	segs := strings.Split(b.String(), "/")
	for i, s := range segs {
		s, _, _ = strings.Cut(s, ";")
		if t := strings.TrimRight(s, ". "); t != "" || s == "" {
			s = t
		} else if s != "." && s != ".." {
			s = ".." // "...", ". .": a parent to some servers
		}
		segs[i] = s
	}
	return cleanKeepSlash(strings.Join(segs, "/"))
}

// railsPath reads a raw path as a Rails-style router does: decoded once
// (Rack), cleaned, and the last segment's ".format" taken off
// ("/org/repo.json" routes as "/org/repo", format json).
func railsPath(raw string) string {
	p := raw
	if d, err := url.PathUnescape(raw); err == nil {
		p = d
	}
	p = cleanKeepSlash(p)
	dir, last := path.Split(p)
	if i := strings.LastIndexByte(last, '.'); i > 0 {
		last = last[:i]
	}
	return cleanKeepSlash(dir + last)
}

// goPath reads a raw path as Go's ServeMux does: decoded once, cleaned.
func goPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return cleanKeepSlash(u.Path)
}

func cleanKeepSlash(p string) string {
	if p == "" {
		return "/"
	}
	c := path.Clean("/" + strings.TrimPrefix(p, "/"))
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// frameworkMethods are the methods a request means to Rails (Rack's
// MethodOverride), Laravel and Symfony, and Express's method-override: the
// declared one and, on a POST, any override (a header in any spelling, a
// "_method" field in the query, a form or multipart body, or a JSON body's
// top level).
func frameworkMethods(r *http.Request, body []byte) []string {
	out := []string{r.Method}
	if r.Method != http.MethodPost {
		return out
	}
	for name, vs := range r.Header {
		if f := foldLetters(name); strings.Contains(f, "methodoverride") || f == "xhttpmethod" {
			out = append(out, strings.ToUpper(vs[0]))
		}
	}
	field := func(vals url.Values) {
		for k, vs := range vals {
			// PHP reads "." and " " in a key as "_"; Rack and PHP nest on "[".
			k = strings.NewReplacer(".", "_", " ", "_").Replace(k)
			if k == "_method" || strings.HasPrefix(k, "_method[") {
				out = append(out, strings.ToUpper(vs[0]))
			}
		}
	}
	for _, sep := range []string{"&", ";"} {
		for part := range strings.SplitSeq(r.URL.RawQuery, sep) {
			v, _ := url.ParseQuery(strings.ReplaceAll(part, ";", "&"))
			field(v)
		}
	}
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case mt == "" || mt == "application/x-www-form-urlencoded":
		v, _ := url.ParseQuery(string(body))
		field(v)
	case strings.HasPrefix(mt, "multipart/"):
		if f, err := multipart.NewReader(bytes.NewReader(body), params["boundary"]).ReadForm(1 << 20); err == nil {
			field(f.Value)
		}
	case strings.Contains(mt, "json"):
		var m map[string]any
		if json.Unmarshal(body, &m) == nil {
			for k, v := range m {
				if k == "_method" {
					out = append(out, strings.ToUpper(fmt.Sprint(v)))
				}
			}
		}
	}
	return out
}

func TestCanonicalPath(t *testing.T) {
	for _, ok := range []struct{ raw, dec string }{
		{"/", "/"},
		{"/org/repo", "/org/repo"},
		{"/org/repo/", "/org/repo/"},
		{"/org/rep%6f.git/info/refs", "/org/repo.git/info/refs"},
		{"/v1/messages", "/v1/messages"},
		{"/a%20b", "/a b"},
		{"/a:b@c", "/a:b@c"},
	} {
		dec, esc, err := canonicalPath(ok.raw)
		if err != nil || dec != ok.dec {
			t.Errorf("canonicalPath(%q) = %q, %v; want %q", ok.raw, dec, err, ok.dec)
			continue
		}
		if d2, e2, err := canonicalPath(esc); err != nil || d2 != dec || e2 != esc {
			t.Errorf("canonicalPath(%q) (the forwarded form of %q) = %q %q %v", esc, ok.raw, d2, e2, err)
		}
	}
	for _, bad := range []string{
		"", "org", "//x", "/a//b", "/a/./b", "/a/../b", "/..", "/a/.",
		"/org/repo/..;/other", "/org/repo;jsessionid=1/x", "/org/repo/%3b/x",
		"/org/repo/%2e%2e/other", "/org/repo/%2E./x", "/org/repo/%252e%252e/other", "/org/repo/%25",
		"/org/repo/%2fx", "/org/repo%2F..%2Fother",
		"/org/repo\\..\\other", "/org/repo/%5c..%5cother",
		"/org/repo/%ef%bc%8e%ef%bc%8e/other", "/org/repo/\uff0e\uff0e/other", "/org/repo/%e2%80%a4%e2%80%a4/x",
		"/org/repo/%c0%ae%c0%ae/other", "/org/repo/%ef%bc%8fother",
		"/org/repo/.../x", "/org/repo/x./y", "/org/repo/x%20/y", "/org/repo/x.",
		"/org/repo/%3f/x", "/org/repo/%23", "/org/repo/%00", "/org/repo/%0a", "/org/repo/%7f",
		"/org/repo/%zz", "/org/repo/%4",
	} {
		if dec, _, err := canonicalPath(bad); err == nil {
			t.Errorf("canonicalPath(%q) accepted it as %q", bad, dec)
		}
	}
}

// FuzzCanonicalReading: whatever the box sends, a path the canonical
// reading accepts is read the same by a servlet container, the loosest
// server (decoding until nothing changes, Unicode folded, "\" as "/") and
// Go, both as sent and as forwarded, and reading the forwarded form again
// yields it unchanged. A query and a header name the rules accept under
// limited methods make no framework see another method.
func FuzzCanonicalReading(f *testing.F) {
	for _, s := range []string{"/org/repo", "/org/repo/..;/x", "/a/%252e%252e/b", "/a/\uff0e\uff0e/b", "/a%20b/c", "/x/%41/"} {
		f.Add(s, "a=1&_method=DELETE", "X_HTTP_METHOD_OVERRIDE")
	}
	rules := &CredentialRules{Methods: []string{"POST"}}
	f.Fuzz(func(t *testing.T, raw, query, header string) {
		if dec, esc, err := canonicalPath(raw); err == nil {
			for _, p := range []string{raw, esc} {
				if s, l, g := servletPath(p), lenientPath(p), goPath(p); s != dec || l != dec || g != dec {
					t.Fatalf("canonicalPath(%q) = %q, but %q reads as servlet %q, lenient %q, Go %q", raw, dec, p, s, l, g)
				}
			}
			if d2, e2, err := canonicalPath(esc); err != nil || d2 != dec || e2 != esc {
				t.Fatalf("canonicalPath(%q) = %q %q, again %q %q %v", raw, dec, esc, d2, e2, err)
			}
		}
		h := http.Header{}
		if header != "" {
			h[header] = []string{"DELETE"}
		}
		why, _ := rules.permit(canonicalRequest{method: "POST", path: "/", escaped: "/", rawQuery: query, header: h})
		if why != "" {
			return
		}
		u, err := url.Parse("/?" + query)
		if err != nil {
			return // Go's client would not send it either
		}
		r := &http.Request{Method: "POST", URL: u, Header: h.Clone()}
		r.Header.Set("Content-Type", "text/plain")
		if ms := frameworkMethods(r, nil); len(ms) != 1 {
			t.Fatalf("query %q, header %q: allowed, but a framework reads methods %v", query, header, ms)
		}
	})
}

// diffCred is one credential of the differential test and what its rules
// allow, stated independently of the broker's code.
type diffCred struct {
	name    string
	rules   *CredentialRules
	methods []string // allowed methods, whatever reading
	prefix  []string // allowed path prefixes
	gitPOST bool     // read_only on a git host: a POST only as git's fetch
}

// TestCredentialRulesDifferential (issue 35): a corpus of request forms
// (override headers in every spelling, _method in the query and in form,
// multipart and JSON bodies, encoded and double-encoded dots and slashes,
// ";" parameters, full-width characters, bodies on GET and HEAD) sent
// through the real broker to a real upstream on loopback. For every
// request the upstream receives, the method as Rails, Laravel, Symfony and
// Express would read it, and the path as a servlet container, a
// Rails-style router, the loosest server and Go's router would read it,
// are ones the rule allows;
// read_only bodies on GET and HEAD never arrive, and a read_only POST
// arrives only as git's fetch on a git host's credential.
func TestCredentialRulesDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of requests")
	}
	for _, via := range []string{"broker", "relay"} {
		t.Run(via, func(t *testing.T) { differential(t, via) })
	}
}

// differential runs the corpus through the broker's own routes (via
// "broker") or through the laptop's relay handler on a Unix socket ("relay":
// a strict HTTP/1.1 server of Go's, the same admit).
func differential(t *testing.T, via string) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	creds := []diffCred{
		{name: "get", rules: &CredentialRules{Methods: []string{"GET", "HEAD"}, Paths: []string{"/org/repo"}}, methods: []string{"GET", "HEAD"}, prefix: []string{"/org/repo"}},
		{name: "post", rules: &CredentialRules{Methods: []string{"POST"}, Paths: []string{"/org/repo/issues"}}, methods: []string{"POST"}, prefix: []string{"/org/repo/issues"}},
		{name: "git", rules: &CredentialRules{ReadOnly: true, Git: true, Paths: []string{"/org/repo", "/org/repo.git"}}, methods: []string{"GET", "HEAD", "OPTIONS"}, prefix: []string{"/org/repo", "/org/repo.git"}, gitPOST: true},
		{name: "api", rules: &CredentialRules{ReadOnly: true, Paths: []string{"/org/repo"}}, methods: []string{"GET", "HEAD", "OPTIONS"}, prefix: []string{"/org/repo"}},
	}
	var cs []Credential
	for _, c := range creds {
		cs = append(cs, Credential{Name: c.name, Upstream: up.srv.URL + "/base-" + c.name, Header: HeaderBasic,
			Secret: staticSecret("tok"), RootCAs: up.pool(), Rules: c.rules})
	}
	prefix, host := "", "192.168.5.4:4242"
	var dial func() (net.Conn, error)
	if via == "broker" {
		p, _ := startCredProxy(t, cs)
		prefix = CredentialPrefix + p.tok + "/"
		dial = func() (net.Conn, error) { return net.Dial("tcp", p.addr) }
	} else {
		b, err := NewCredentialBroker(CredentialConfig{Resolver: testResolver{}, Credentials: cs})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := b.NewToken("relay-1")
		if err != nil {
			t.Fatal(err)
		}
		sock := startRelay(t, b, 0)
		prefix, host = CredentialPrefix+tok+"/", RelayHost
		dial = func() (net.Conn, error) { return net.Dial("unix", sock) }
	}

	paths := []string{
		"/org/repo", "/org/repo/issues", "/org/repo/issues/1", "/org/repo.git/git-upload-pack", "/org/repo/git-upload-pack",
		"/org/repo/repository/files/git-upload-pack", "/org/repo.git/git-receive-pack", "/org/repo.git/info/refs",
		"/org/other", "/org/repo/..;/other", "/org/repo;x=1/../../other", "/org/repo/%2e%2e/other", "/org/repo/%252e%252e/other",
		"/org/repo/%252e%252e%252fother", "/org/repo/%2fx", "/org/repo%2f..%2fother", "/org/repo/..%5cother", "/org/repo/%5c..%5cother",
		"/org/repo/%ef%bc%8e%ef%bc%8e/other", "/org/repo/\uff0e\uff0e/other", "/org/repo/%ef%bc%8f..%ef%bc%8fother",
		"/org/repo/%c0%ae%c0%ae/other", "/org/repo/.../other", "/org/repo/..%20/other", "/org/repo/x%3f/../../other",
		"/org/rep%6f/issues", "/org/repo/issues/..;/../other", "/org/repo/%252fother",
	}
	type form struct {
		name, query, head, body string
	}
	mp := func(field string) string {
		return "--XX\r\nContent-Disposition: form-data; name=\"" + field + "\"\r\n\r\nDELETE\r\n--XX--\r\n"
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	io.WriteString(zw, "0032want 0000000000000000000000000000000000000000\n00000009done\n")
	zw.Close()
	forms := []form{
		{name: "plain"},
		{name: "header", head: "X-HTTP-Method-Override: DELETE\r\n"},
		{name: "header underscores", head: "X_HTTP_METHOD_OVERRIDE: DELETE\r\n"},
		{name: "header x-http-method", head: "X-HTTP-Method: DELETE\r\n"},
		{name: "header x-method-override", head: "x-method-override: DELETE\r\n"},
		{name: "header lower", head: "x-http-method-override: DELETE\r\n"},
		{name: "x-original-url", head: "X-Original-URL: /org/other\r\n"},
		{name: "x-rewrite-url", head: "X-Rewrite-Url: /org/other\r\n"},
		{name: "x_original_url", head: "X_ORIGINAL_URL: /org/other\r\n"},
		{name: "x-forwarded-prefix", head: "X-Forwarded-Prefix: /org/other\r\n"},
		{name: "query", query: "_method=DELETE"},
		{name: "query encoded key", query: "%5Fmethod=DELETE"},
		{name: "query double-encoded key", query: "%255Fmethod=DELETE"},
		{name: "query semicolon", query: "a=1;_method=DELETE"},
		{name: "query nested", query: "_method[]=DELETE"},
		{name: "query dot", query: ".method=DELETE"},
		{name: "query space", query: "+method=DELETE"},
		{name: "query bare method", query: "method=DELETE"},
		{name: "query full-width", query: "%EF%BC%BFmethod=DELETE"},
		{name: "query push", query: "service=git-receive-pack"},
		{name: "query push encoded", query: "service=git-%2572eceive-pack"},
		{name: "form body", head: "Content-Type: application/x-www-form-urlencoded\r\n", body: "a=1&_method=DELETE"},
		{name: "form body no type", body: "_method=DELETE"},
		{name: "form body charset", head: "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n", body: "%5Fmethod=DELETE"},
		{name: "multipart", head: "Content-Type: multipart/form-data; boundary=XX\r\n", body: mp("_method")},
		{name: "json", head: "Content-Type: application/json\r\n", body: `{"title":"x","_method":"DELETE"}`},
		{name: "json escaped", head: "Content-Type: application/json\r\n", body: `{"\u005fmethod":"DELETE"}`},
		{name: "json-rpc", head: "Content-Type: application/json\r\n", body: `{"jsonrpc":"2.0","method":"DELETE"}`},
		{name: "json plain", head: "Content-Type: application/json\r\n", body: `{"title":"x"}`},
		{name: "text body", head: "Content-Type: text/plain\r\n", body: "hello"},
		{name: "git fetch", head: "Content-Type: " + UploadPackType + "\r\n", body: "0032want 0000000000000000000000000000000000000000\n00000009done\n"},
		{name: "git fetch gzip", head: "Content-Type: " + UploadPackType + "\r\nContent-Encoding: gzip\r\n", body: gz.String()},
		{name: "git type, form body", head: "Content-Type: " + UploadPackType + "\r\n", body: "title=x&content=y"},
		{name: "git fetch with query", query: "x=1", head: "Content-Type: " + UploadPackType + "\r\n", body: "0000"},
		{name: "git fetch form type", head: "Content-Type: application/x-www-form-urlencoded\r\n", body: "0000"},
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"}

	type job struct {
		cred, method, path string
		f                  form
	}
	var jobs []job
	for _, c := range creds {
		for _, m := range methods {
			for _, pth := range paths {
				for _, f := range forms {
					jobs = append(jobs, job{c.name, m, pth, f})
				}
			}
		}
	}
	ch := make(chan job)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for j := range ch {
				target := prefix + j.cred + j.path
				if j.f.query != "" {
					target += "?" + j.f.query
				}
				req := j.method + " " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + j.f.head +
					fmt.Sprintf("Content-Length: %d\r\nConnection: close\r\n\r\n", len(j.f.body)) + j.f.body
				sendOn(t, dial, j.method, req)
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()

	got := up.all()
	reached := map[string]int{}
	for _, r := range got {
		body, _ := io.ReadAll(r.Body)
		rawPath, _, _ := strings.Cut(r.RequestURI, "?")
		var c *diffCred
		for i := range creds {
			if strings.HasPrefix(rawPath, "/base-"+creds[i].name+"/") {
				c = &creds[i]
			}
		}
		if c == nil {
			t.Errorf("the upstream got %s %q, below no credential's base", r.Method, r.RequestURI)
			continue
		}
		reached[c.name]++
		rest := strings.TrimPrefix(rawPath, "/base-"+c.name)
		what := fmt.Sprintf("credential %s: upstream got %s %q (%v) body %q", c.name, r.Method, r.RequestURI, r.Header, body)
		views := map[string]string{"servlet": servletPath(rest), "lenient": lenientPath(rest), "rails": railsPath(rest), "go": goPath(rest)}
		// IIS URL Rewrite, older Symfony and Zend take the path from these
		// headers; a proxy that honours X-Forwarded-Prefix prepends it.
		for name, vs := range r.Header {
			switch foldLetters(name) {
			case "xoriginalurl", "xrewriteurl":
				views["rewrite header"] = cleanKeepSlash(strings.TrimPrefix(vs[0], "/base-"+c.name))
			case "xforwardedprefix":
				views["forwarded prefix"] = cleanKeepSlash(vs[0] + views["go"])
			}
		}
		for reader, pth := range views {
			if !slices.ContainsFunc(c.prefix, func(p string) bool { return pathUnder(pth, p) }) {
				t.Errorf("%s: a %s server reads path %q, outside %v", what, reader, pth, c.prefix)
			}
			if c.rules.ReadOnly && namesPush(pth) {
				t.Errorf("%s: a %s server reads a push in %q", what, reader, pth)
			}
		}
		if c.rules.ReadOnly {
			for _, rd := range readings(r.URL.RawQuery) {
				if namesPush(rd) {
					t.Errorf("%s: the query reads as a push", what)
				}
			}
		}
		for _, m := range frameworkMethods(r, body) {
			switch {
			case slices.Contains(c.methods, m):
				if c.rules.ReadOnly && len(body) > 0 {
					t.Errorf("%s: a read_only %s arrived with a body", what, m)
				}
			case m == http.MethodPost && c.gitPOST:
				mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
				if mt != UploadPackType || r.URL.RawQuery != "" || !strings.HasSuffix(views["servlet"], "/git-upload-pack") {
					t.Errorf("%s: a read_only POST that is not git's fetch", what)
				}
			default:
				t.Errorf("%s: a framework reads method %s, not allowed", what, m)
			}
		}
	}
	for _, c := range creds {
		if reached[c.name] == 0 {
			t.Errorf("credential %s: no request reached the upstream: the corpus tests nothing", c.name)
		}
	}
	t.Logf("%d requests, %d reached the upstream: %v", len(jobs), len(got), reached)
}

// sendRaw sends one raw request and reads its answer's head.
func sendRaw(t *testing.T, addr, method, req string) int {
	return sendOn(t, func() (net.Conn, error) { return net.Dial("tcp", addr) }, method, req)
}

// sendOn is sendRaw on a connection from dial.
func sendOn(t *testing.T, dial func() (net.Conn, error), method, req string) int {
	c, err := dial()
	if err != nil {
		t.Error(err)
		return 0
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second)) //nolint:errcheck
	if _, err := io.WriteString(c, req); err != nil {
		return 0 // refused before the body was read: the answer may be gone too
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	resp.Body.Close()
	return resp.StatusCode
}

func TestJudgeBody(t *testing.T) {
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	jsonH := http.Header{"Content-Type": {"application/json"}}
	git := http.Header{"Content-Type": {UploadPackType}}
	for _, c := range []struct {
		name  string
		check bodyCheck
		h     http.Header
		body  string
		ok    bool
	}{
		{"form", bodyNoOverride, form, "a=1&b=2", true},
		{"form override", bodyNoOverride, form, "a=1&_method=PUT", false},
		{"form payment_method", bodyNoOverride, form, "payment_method=pm_1", true},
		{"form bare method", bodyNoOverride, form, "method=eth_call", true},
		{"form upper _METHOD", bodyNoOverride, form, "_METHOD=PUT", false},
		{"form x-http-method-override", bodyNoOverride, form, "x-http-method-override=PUT", false},
		{"json-rpc", bodyNoOverride, jsonH, `{"jsonrpc":"2.0","method":"eth_call","id":1}`, true},
		{"form gzip", bodyNoOverride, http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Content-Encoding": {"gzip"}}, "x", false},
		{"two content types", bodyNoOverride, http.Header{"Content-Type": {"text/plain", "application/x-www-form-urlencoded"}}, "_method=PUT", false},
		{"bad content type", bodyNoOverride, http.Header{"Content-Type": {"a/b; ="}}, "x", false},
		{"json", bodyNoOverride, jsonH, `{"a":{"_method":"x"},"b":[1]}`, true},
		{"json override", bodyNoOverride, jsonH, `{"_METHOD":"DELETE"}`, false},
		{"json two values", bodyNoOverride, jsonH, `{"a":1}{"_method":"DELETE"}`, false},
		{"json broken", bodyNoOverride, jsonH, `{"a":`, false},
		{"json array", bodyNoOverride, jsonH, `[{"_method":"x"}]`, true},
		{"multipart no boundary", bodyNoOverride, http.Header{"Content-Type": {"multipart/form-data"}}, "x", false},
		{"octet-stream", bodyNoOverride, http.Header{"Content-Type": {"application/octet-stream"}}, "_method=DELETE", true},
		{"pkt-lines", bodyUploadPack, git, "0009done\n0000", true},
		{"pkt-lines short", bodyUploadPack, git, "0009don", false},
		{"pkt-lines empty", bodyUploadPack, git, "", false},
		{"pkt-lines upper hex", bodyUploadPack, git, "000Adone\n\n", false},
		{"pkt-lines form", bodyUploadPack, git, "title=a&content=b", false},
		{"pkt-lines deflate", bodyUploadPack, http.Header{"Content-Type": {UploadPackType}, "Content-Encoding": {"deflate"}}, "0000", false},
	} {
		if why := judgeBody(c.check, c.h, []byte(c.body)); (why == "") != c.ok {
			t.Errorf("%s: %q, want allowed %v", c.name, why, c.ok)
		}
	}
	// gzip: one member, nothing after it
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, "0009done\n0000")
	zw.Close()
	gz := http.Header{"Content-Type": {UploadPackType}, "Content-Encoding": {"gzip"}}
	if why := judgeBody(bodyUploadPack, gz, z.Bytes()); why != "" {
		t.Errorf("gzip fetch: %s", why)
	}
	if why := judgeBody(bodyUploadPack, gz, append(z.Bytes(), z.Bytes()...)); why == "" {
		t.Error("two gzip members passed")
	}
}

// TestReadOnlyRealGit (issue 35): real git through a read_only credential
// of a git host still clones and fetches (git http-backend behind TLS on
// loopback, the token required), and its push is refused; a POST to
// .../repository/files/git-upload-pack on an API-shaped upstream (a
// read_only credential that is no git host's) is refused even when it
// looks like git's fetch, and on the git host's credential a POST there
// that is no fetch (a JSON file-create) is refused too.
func TestReadOnlyRealGit(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.test")
	git := func(dir string, args ...string) (string, error) {
		cmd := exec.Command(gitBin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	mustGit := func(dir string, args ...string) {
		t.Helper()
		if out, err := git(dir, args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	work := filepath.Join(root, "work")
	mustGit(root, "init", "-q", "-b", "main", work)
	os.WriteFile(filepath.Join(work, "a"), []byte("one\n"), 0o600) //nolint:errcheck
	mustGit(work, "add", "a")
	mustGit(work, "commit", "-q", "-m", "one")
	mustGit(root, "clone", "-q", "--bare", work, filepath.Join(root, "srv", "org", "repo.git"))

	const token = "ghp_read_only_0123"
	backend := &cgi.Handler{Path: gitBin, Args: []string{"http-backend"}, Dir: root,
		Env: []string{"GIT_PROJECT_ROOT=" + filepath.Join(root, "srv"), "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + home}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	// The recorder reads the body before its handler runs; the CGI gets
	// the recorded copy.
	up.srv.Config.Handler = recordThen(up, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			http.Error(w, "token required", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	p, _ := startCredProxy(t, []Credential{
		{Name: "git", Upstream: up.srv.URL, Header: HeaderBasic, Secret: staticSecret(token), RootCAs: up.pool(),
			Rules: &CredentialRules{ReadOnly: true, Git: true, Paths: []string{"/org/repo.git"}}},
		{Name: "api", Upstream: up.srv.URL + "/api/v4/projects/1", Header: HeaderAuthorization, Secret: staticSecret(token), RootCAs: up.pool(),
			Rules: &CredentialRules{ReadOnly: true}},
	})
	base := "http://192.168.5.4:4242" + CredentialPrefix + p.tok + "/git"
	proxy := []string{"-c", "http.proxy=http://" + p.addr, "-c", "credential.helper="}

	clone := filepath.Join(root, "clone")
	mustGit(root, append(proxy, "clone", "-q", base+"/org/repo.git", clone)...)
	if b, _ := os.ReadFile(filepath.Join(clone, "a")); string(b) != "one\n" {
		t.Fatalf("the clone holds %q", b)
	}
	// A fetch with something to negotiate (haves) after a new commit.
	os.WriteFile(filepath.Join(work, "a"), []byte("two\n"), 0o600) //nolint:errcheck
	mustGit(work, "commit", "-q", "-am", "two")
	mustGit(work, "push", "-q", filepath.Join(root, "srv", "org", "repo.git"), "main")
	mustGit(clone, append(proxy, "fetch", "-q", "origin")...)
	if out, _ := git(clone, "log", "--format=%s", "origin/main"); out != "two\none\n" {
		t.Fatalf("after the fetch origin/main is %q", out)
	}
	posts := 0
	for _, r := range up.all() {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			posts++
		}
	}
	if posts < 2 {
		t.Errorf("%d fetch requests (POST git-upload-pack) reached the upstream, want the clone's and the fetch's", posts)
	}
	// A push through the read_only credential is refused.
	os.WriteFile(filepath.Join(clone, "a"), []byte("three\n"), 0o600) //nolint:errcheck
	mustGit(clone, "commit", "-q", "-am", "three")
	if out, err := git(clone, append(proxy, "push", "origin", "main")...); err == nil || !strings.Contains(out, "403") {
		t.Errorf("push through a read_only credential: %v\n%s", err, out)
	}
	for _, r := range up.all() {
		if strings.Contains(r.RequestURI, "receive-pack") {
			t.Errorf("the upstream got %s %s", r.Method, r.RequestURI)
		}
	}

	n := len(up.all())
	fetchLike := "Content-Type: " + UploadPackType + "\r\nContent-Length: 4\r\n\r\n0000"
	for _, c := range []struct{ name, cred, head string }{
		{"API-shaped upstream, git's fetch form", "api", fetchLike},
		{"API-shaped upstream, JSON", "api", "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"},
		{"git host, JSON file create", "git", "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"},
	} {
		pth := "/repository/files/git-upload-pack"
		if c.cred == "git" {
			pth = "/org/repo.git/repository/files/git-upload-pack"
		}
		req := "POST " + CredentialPrefix + p.tok + "/" + c.cred + pth + " HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nConnection: close\r\n" + c.head
		if status := sendRaw(t, p.addr, "POST", req); status != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", c.name, status)
		}
	}
	if got := up.all(); len(got) != n {
		t.Errorf("refused POSTs reached the upstream: %s %s", got[n].Method, got[n].RequestURI)
	}
}

// recordThen records each request in u (as newCredUpstream does) and
// serves it with h, giving h the recorded body.
func recordThen(u *upstreamRecorder, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r2 := r.Clone(context.Background())
		r2.Body = io.NopCloser(bytes.NewReader(body))
		u.mu.Lock()
		u.got = append(u.got, r2)
		u.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h(w, r)
	})
}

// TestJudgedBodyThroughBroker: under rules that name methods, a body the
// rules must see is read whole, judged, and forwarded as the bytes judged
// with their length (a chunked body arrives with a Content-Length); a
// client that waits for "100 Continue" gets it before the broker reads; an
// override in the body is refused before the upstream is reached; a body
// declared larger than MaxJudgedBody is refused with 413.
func TestJudgedBodyThroughBroker(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p, cl := startCredProxy(t, []Credential{{Name: "api", Upstream: up.srv.URL, Header: HeaderAPIKey,
		Secret: staticSecret("k"), RootCAs: up.pool(), Rules: &CredentialRules{Methods: []string{"POST"}}}})
	head := "POST " + CredentialPrefix + p.tok + "/api/v1/messages HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nConnection: close\r\n"

	// chunked form body: forwarded with its length
	body := "a=1&b=two"
	if s := sendRaw(t, p.addr, "POST", head+"Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"+
		fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body)); s != 200 {
		t.Fatalf("chunked form: %d", s)
	}
	r := up.last(t)
	got, _ := io.ReadAll(r.Body)
	if string(got) != body || r.ContentLength != int64(len(body)) || len(r.TransferEncoding) != 0 {
		t.Errorf("upstream got %q, length %d, transfer %v", got, r.ContentLength, r.TransferEncoding)
	}

	// Expect: 100-continue: the broker says continue, then judges
	c, err := net.Dial("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second)) //nolint:errcheck
	jsonBody := `{"model":"m","messages":[]}`
	fmt.Fprintf(c, "%sContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n", head, len(jsonBody))
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("before the body: %q %v", line, err)
	}
	br.ReadString('\n') //nolint:errcheck // the blank line after 100 Continue
	io.WriteString(c, jsonBody)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after 100 Continue: %v %v", resp, err)
	}
	if r := up.last(t); r.Header.Get("Expect") != "" {
		t.Errorf("the upstream got Expect %q", r.Header.Get("Expect"))
	}

	// A body no framework reads fields from streams, whatever its size
	// (here past MaxJudgedBody).
	big := strings.Repeat("x", MaxJudgedBody+10)
	if s := sendRaw(t, p.addr, "POST", head+fmt.Sprintf("Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n%s", len(big), big)); s != 200 {
		t.Errorf("a large octet-stream body: %d, want it forwarded", s)
	}
	if r := up.last(t); r.ContentLength != int64(len(big)) {
		t.Errorf("the upstream got a body of %d bytes", r.ContentLength)
	}

	n := len(up.all())
	for _, c := range []struct {
		name, req string
		status    int
	}{
		{"json override", head + "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"_method\":\"DELETE\"}", 403},
		{"too large to judge", head + fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n\r\n{", MaxJudgedBody+1), 413},
	} {
		if s := sendRaw(t, p.addr, "POST", c.req); s != c.status {
			t.Errorf("%s: %d, want %d", c.name, s, c.status)
		}
	}
	if len(up.all()) != n {
		t.Error("a refused body reached the upstream")
	}
	var rule int
	for _, e := range cl.all(4) {
		if e.Refusal == RefusedRule {
			rule++
		}
	}
	if rule != 2 {
		t.Errorf("%d rule refusals logged, want 2", rule)
	}
}

// FuzzJudgeBody: no body panics the judge; a form body it passes has no
// "_method" field as url.ParseQuery reads it, a JSON body it passes has no
// top-level "_method", and a fetch body it passes is whole pkt-lines.
func FuzzJudgeBody(f *testing.F) {
	f.Add("application/x-www-form-urlencoded", []byte("a=1&_method=PUT"))
	f.Add("application/json", []byte(`{"_method":"PUT"}`))
	f.Add("multipart/form-data; boundary=XX", []byte("--XX\r\nContent-Disposition: form-data; name=\"_method\"\r\n\r\nPUT\r\n--XX--\r\n"))
	f.Add(UploadPackType, []byte("0009done\n0000"))
	f.Fuzz(func(t *testing.T, ct string, body []byte) {
		h := http.Header{"Content-Type": {ct}}
		if judgeBody(bodyUploadPack, h, body) == "" && !pktLines(body) {
			t.Fatalf("passed as git's fetch: %q", body)
		}
		if judgeBody(bodyNoOverride, h, body) != "" {
			return
		}
		mt, _, _ := mime.ParseMediaType(ct)
		switch {
		case mt == "" || mt == "application/x-www-form-urlencoded":
			if v, err := url.ParseQuery(string(body)); err == nil && v.Has("_method") {
				t.Fatalf("form %q passed with _method", body)
			}
		case mt == "application/json":
			var m map[string]any
			if json.Unmarshal(body, &m) == nil {
				if _, ok := m["_method"]; ok {
					t.Fatalf("JSON %q passed with _method", body)
				}
			}
		}
	})
}

// TestCredentialTrailersDropped: a chunked body's trailers (here an
// override and a credential header the rules never saw) do not reach the
// upstream, with rules or without.
func TestCredentialTrailersDropped(t *testing.T) {
	up := newCredUpstream(t, func(w http.ResponseWriter, r *http.Request) {})
	p, _ := startCredProxy(t, []Credential{
		{Name: "any", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret("k"), RootCAs: up.pool()},
		{Name: "post", Upstream: up.srv.URL, Header: HeaderAPIKey, Secret: staticSecret("k"), RootCAs: up.pool(), Rules: &CredentialRules{Methods: []string{"POST"}}},
	})
	for _, name := range []string{"any", "post"} {
		req := "POST " + CredentialPrefix + p.tok + "/" + name + "/x HTTP/1.1\r\nHost: 192.168.5.4:4242\r\nConnection: close\r\n" +
			"Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nTrailer: X-Http-Method-Override, X-Api-Key\r\n\r\n" +
			"2\r\nhi\r\n0\r\nX-Http-Method-Override: DELETE\r\nX-Api-Key: box\r\n\r\n"
		if s := sendRaw(t, p.addr, "POST", req); s != 200 {
			t.Fatalf("%s: %d", name, s)
		}
		r := up.last(t)
		if len(r.Trailer) != 0 || r.Header.Get("Trailer") != "" || r.Header.Get("X-Api-Key") != "k" {
			t.Errorf("%s: the upstream got trailers %v, header %v", name, r.Trailer, r.Header)
		}
	}
}
