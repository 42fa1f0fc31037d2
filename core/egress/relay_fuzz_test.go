package egress

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"net/http"
	"path"
	"strings"
	"testing"
)

// FuzzRelayRequest feeds raw bytes, as the remote host could send them
// over the forwarded socket, through the relay's decoding (Go's HTTP/1.1
// reader, relayFrame, admit) and the upstream request it builds
// (outbound). Whatever the bytes: an admitted request carried the relay's
// token, is inside the credential's rules, goes only to the credential's
// upstream below its base path, and carries the real key exactly once
// and no credential header of the sender's.
func FuzzRelayRequest(f *testing.F) {
	tok := strings.Repeat("5e", 32)
	b, err := NewCredentialBroker(CredentialConfig{Credentials: []Credential{
		{Name: "api", Upstream: "https://up.test/base", Header: HeaderAPIKey, Secret: staticSecret(realKey),
			Rules: &CredentialRules{Methods: []string{"GET", "POST"}, Paths: []string{"/v1"}}},
		{Name: "git", Upstream: "https://git.test", Header: HeaderAPIKey, Secret: staticSecret(realKey),
			Rules: &CredentialRules{ReadOnly: true, Git: true}},
	}})
	if err != nil {
		f.Fatal(err)
	}
	issueToken(b, tok, "fuzz")
	for _, s := range []string{
		"GET /corral/credential/" + tok + "/api/v1/messages?x=1 HTTP/1.1\r\nHost: corral-relay\r\n\r\n",
		"POST /corral/credential/" + tok + "/api/v1/%2e%2e/x HTTP/1.1\r\nHost: corral-relay\r\nContent-Length: 1\r\n\r\nx",
		"POST /corral/credential/" + tok + "/git/o/r.git/git-receive-pack HTTP/1.1\r\nHost: corral-relay\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"GET /corral/credential/" + tok + "/git/o/r.git/info/refs?service=git-receive-pack HTTP/1.1\r\nHost: corral-relay\r\n\r\n",
		"GET http://corral-relay/corral/credential/" + tok + "/api/v1 HTTP/1.1\r\nHost: corral-relay\r\nX-Api-Key: box\r\nAuthorization: x\r\n\r\n",
		"GET /corral/credential/" + tok + "/api//v1 HTTP/1.0\r\nHost: corral-relay\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
		if err != nil {
			return
		}
		var ev CredentialEvent
		if rf := relayFrame(req, 1<<20); rf.status != 0 {
			return
		}
		c, rest, relay, rf := b.admit(&ev, req, nil)
		if rf.status != 0 {
			if strings.Contains(fmt.Sprint(ev), tok) {
				t.Fatalf("the event holds the token: %+v", ev)
			}
			return
		}
		if ev.Session != "fuzz" || !strings.Contains(req.URL.EscapedPath(), "/"+tok+"/") {
			t.Fatalf("admitted without the token: %q", req.URL.EscapedPath())
		}
		method := req.Method
		sent := req.Header.Clone()
		out, _, rf := b.outbound(c, relay, req, rest)
		if rf.status != 0 {
			return
		}
		base := c.upstream.Path
		clean := path.Clean(out.URL.Path)
		switch {
		case out.URL.Scheme != "https" || out.URL.Host != c.upstream.Host || out.Host != c.upstream.Host:
			t.Fatalf("%s reaches %s (Host %s)", c.Name, out.URL, out.Host)
		case out.URL.User != nil:
			t.Fatalf("userinfo in %s", out.URL)
		case clean != base && !strings.HasPrefix(clean, base+"/"):
			t.Fatalf("%s: path %q leaves base %q", c.Name, out.URL.Path, base)
		case c.Name == "api" && !pathUnder(clean, "/base/v1"):
			t.Fatalf("api: path %q outside the rules", out.URL.Path)
		case c.Name == "api" && method != "GET" && method != "POST":
			t.Fatalf("api: method %q outside the rules", method)
		case c.Name == "git" && strings.Contains(strings.ToLower(out.URL.String()), "receive-pack"):
			t.Fatalf("git: a push passed read_only: %s %s", method, out.URL)
		case c.Name == "git" && method != "GET" && method != "HEAD" && method != "OPTIONS" && !strings.HasSuffix(clean, "/git-upload-pack"):
			t.Fatalf("git: %s %s passed read_only", method, out.URL)
		}
		if k := out.Header.Values("X-Api-Key"); len(k) != 1 || k[0] != realKey {
			t.Fatalf("x-api-key %q", k)
		}
		for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization", "X-Goog-Api-Key"} {
			if out.Header.Get(h) != "" {
				t.Fatalf("%s from the sender survived (sent %v)", h, sent)
			}
		}
	})
}

// issueToken makes tok a token of b for session (the fuzz corpus needs a
// fixed one).
func issueToken(b *CredentialBroker, tok, session string) {
	h := sha256Sum(tok)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tokens[h] = tokenEntry{session: session}
	b.order = append(b.order, h)
}

func sha256Sum(s string) [32]byte { return sha256.Sum256([]byte(s)) }
