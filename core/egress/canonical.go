package egress

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The canonical reading of a credential request (issue 35). A rule is
// only as good as its agreement with the server behind the upstream, and
// servers read the same bytes differently: a servlet container drops
// ";params" from a segment before it resolves "..", some frameworks
// decode a path twice or fold full-width characters, Rails, Laravel,
// Symfony and Express take the method from an override header or a
// "_method" field. So every credential request is read once, here, the
// rules compare that reading, and the broker forwards exactly it:
//
//   - the path is percent-decoded exactly once; what a second reading could
//     turn into a separator or a dot segment (an encoded "/", ".", "\",
//     ";" or "%", a raw or decoded ";", "\", "?" or "#", any non-ASCII or
//     control byte, a segment of dots or ending in a dot or a space) is
//     refused, never guessed; the path forwarded is the decoded one
//     re-escaped by Go, so one decoding of what the upstream gets is
//     exactly the path the rules saw (canonicalPath);
//   - on a credential whose rules name methods (methods, read_only), every
//     method-override form a common framework honours is refused: a
//     header whose name holds "method" in any spelling, an override key
//     ("_method" and its spellings) in the query under every separator
//     and decoding, in a form, multipart or JSON body (overrideQuery,
//     judgeBody). A body that cannot be judged (too large, compressed, not
//     parseable as its type claims) is refused;
//   - on a credential whose rules name paths, a header a server may take
//     the path or the host from instead of the request line
//     (X-Original-URL and its kind, isPathHeader) is refused;
//   - a body the rules judged is forwarded as the bytes judged, with its
//     length, never streamed past the check, and no trailer is forwarded.

// MaxJudgedBody caps a body the rules must read before it is forwarded (a
// form or JSON body under limited methods, git's fetch request under
// read_only). A larger one is refused: it cannot be judged.
const MaxJudgedBody = 16 << 20

// bodyCheck says what the rules must see of a request's body before it may
// be forwarded.
type bodyCheck int

const (
	// bodyAsIs: the body is forwarded as it comes.
	bodyAsIs bodyCheck = iota
	// bodyNoOverride: the body is read whole and refused if any field of
	// it, read as the frameworks read its content type, overrides the
	// method.
	bodyNoOverride
	// bodyUploadPack: the body is git's fetch request: pkt-lines, plain
	// or gzip (what git sends when the request is larger than 1 KiB).
	bodyUploadPack
)

// canonicalRequest is a credential request as the rules judge it.
type canonicalRequest struct {
	method string
	// path is REST decoded once (canonicalPath); escaped is it as the
	// broker forwards it.
	path, escaped string
	rawQuery      string
	header        http.Header
	// body reports whether the request declares a body (a length other
	// than 0, or a transfer coding).
	body bool
}

func readCanonical(req *http.Request, dec, escaped string) canonicalRequest {
	q := req.URL.RawQuery
	if req.URL.ForceQuery && q == "" {
		q = "?" // an empty query the upstream still sees; never equal to none
	}
	return canonicalRequest{method: req.Method, path: dec, escaped: escaped, rawQuery: q, header: req.Header,
		body: req.ContentLength != 0 || len(req.TransferEncoding) > 0}
}

// canonicalPath reads REST (the path below the upstream's base, escaped as
// the box sent it) as every rule judges it: decoded once, and refused
// wherever another server could read it otherwise (see above). It returns
// the decoded path and the path as the broker forwards it; reading the
// forwarded path again yields the same pair (TestCanonicalPathIdempotent).
func canonicalPath(raw string) (dec, escaped string, err error) {
	if !strings.HasPrefix(raw, "/") {
		return "", "", errors.New("the path must start with /")
	}
	lower := strings.ToLower(raw)
	for _, enc := range []string{"%2f", "%2e", "%5c", "%3b", "%25"} {
		if strings.Contains(lower, enc) {
			return "", "", errors.New("encoded path separators, dots and percent signs are not allowed")
		}
	}
	dec, err = url.PathUnescape(raw)
	if err != nil {
		return "", "", errors.New("the path has a bad escape")
	}
	for i := 0; i < len(dec); i++ {
		switch c := dec[i]; {
		case c < 0x20 || c == 0x7f:
			return "", "", errors.New("the path holds a control character")
		case c >= 0x80:
			// Full-width dots and solidi, overlong UTF-8: servers that
			// normalise Unicode read them as "." and "/".
			return "", "", errors.New("the path holds a non-ASCII character")
		case strings.IndexByte(`;\?#%`, c) >= 0:
			return "", "", errors.New(`the path holds ";", "\", "?", "#" or "%" (servers disagree on what they mean)`)
		}
	}
	segs := strings.Split(dec[1:], "/")
	for i, s := range segs {
		switch {
		case s == "" && i == len(segs)-1:
			// a trailing "/" (or the root)
		case s == "":
			return "", "", errors.New("the path must be clean (no //)")
		case strings.Trim(s, ".") == "":
			return "", "", errors.New("the path must be clean (no ., .. or other dot segment)")
		case strings.HasSuffix(s, ".") || strings.HasSuffix(s, " "):
			// Windows servers drop a segment's trailing dots and spaces.
			return "", "", errors.New("a path segment may not end in a dot or a space")
		}
	}
	return dec, (&url.URL{Path: dec}).EscapedPath(), nil
}

// isOverrideHeader reports whether a header's name, in any spelling
// (case, "-" or "_", any punctuation), may make a server take the method
// from it: X-HTTP-Method-Override, X-HTTP-Method, X-Method-Override,
// X_HTTP_METHOD_OVERRIDE and any other name holding "method".
func isOverrideHeader(name string) bool {
	return strings.Contains(foldLetters(name), "method")
}

// isPathHeader reports whether a header's name, in any spelling, may make
// a server take the request's path or host from it instead of the request
// line: X-Original-URL and X-Rewrite-URL (IIS URL Rewrite, older Symfony
// and Zend), X-Original-URI, X-Forwarded-Prefix and -Path (Spring and
// proxies), Forwarded and X-Forwarded-Host (routers that serve several
// sites), and any other name holding "url", "uri", "path" or "forwarded".
func isPathHeader(name string) bool {
	f := foldLetters(name)
	for _, w := range []string{"url", "uri", "path", "forwarded"} {
		if strings.Contains(f, w) {
			return true
		}
	}
	return false
}

// pathHeader is the first header of h that can override the path, or "".
func pathHeader(h http.Header) string {
	for name := range h {
		if isPathHeader(name) {
			return name
		}
	}
	return ""
}

// overrideKeys are override field names as foldLetters reads them:
// "_method" (Rails, Laravel, Symfony, Express's method-override) and the
// header names used as fields.
var overrideKeys = []string{"method", "httpmethod", "xhttpmethod", "methodoverride", "httpmethodoverride", "xhttpmethodoverride", "xmethodoverride"}

// isOverrideKey reports whether a query or form key, decoded, may name the
// method: its name before any "[" (PHP's and Rack's nested keys), with
// case and every non-letter dropped (PHP turns "." and " " in a key into
// "_"), is an override name. Only the bare word "method", letters alone in
// any case, is no override: no common framework reads it (Rack, Laravel
// and Symfony read "_method"), and JSON-RPC bodies name their call so. A
// non-ASCII key is one (a server that folds Unicode may read a full-width
// "＿method").
func isOverrideKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if k[i] >= 0x80 {
			return true
		}
	}
	if i := strings.IndexByte(k, '['); i >= 0 {
		k = k[:i]
	}
	f := foldLetters(k)
	if f == "method" && len(k) == len(f) {
		return false
	}
	return slices.Contains(overrideKeys, f)
}

// foldLetters is s lowercased with everything but ASCII letters dropped.
func foldLetters(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c >= 'a' && c <= 'z' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// readings is every reading of a query or form field a server may make:
// the raw text and each further percent-decoding ("+" as a space), until
// nothing changes or the text no longer decodes.
func readings(s string) []string {
	out := []string{s}
	for range 4 {
		d, err := url.QueryUnescape(s)
		if err != nil || d == s {
			break
		}
		out = append(out, d)
		s = d
	}
	return out
}

// formFields calls fn with every key and value of a query or an
// urlencoded form under every reading: split on "&" and on ";" (older
// Rack splits on both), each part's key and value in each of their
// decodings. It stops at the first non-empty answer.
func formFields(raw string, fn func(key bool, s string) string) string {
	for part := range strings.FieldsFuncSeq(raw, func(r rune) bool { return r == '&' || r == ';' }) {
		k, v, _ := strings.Cut(part, "=")
		for _, r := range readings(k) {
			if why := fn(true, r); why != "" {
				return why
			}
		}
		for _, r := range readings(v) {
			if why := fn(false, r); why != "" {
				return why
			}
		}
	}
	return ""
}

// overrideHeader is the first header of h that can override the method, or
// "".
func overrideHeader(h http.Header) string {
	for name := range h {
		if isOverrideHeader(name) {
			return name
		}
	}
	return ""
}

// overrideQuery is why a query overrides the method, or "".
func overrideQuery(raw string) string {
	return formFields(raw, func(key bool, s string) string {
		if key && isOverrideKey(s) {
			return "a method override in the query (" + quoteShort(s) + ") is not allowed when the credential's methods are limited"
		}
		return ""
	})
}

func quoteShort(s string) string { return strconv.QuoteToASCII(truncate(s, 32)) }

// contentType is the request's one media type, lowercased ("" when it
// sends none); more than one Content-Type header, or one that does not
// parse, is an error.
func contentType(h http.Header) (string, map[string]string, error) {
	vs := h.Values("Content-Type")
	switch len(vs) {
	case 0:
		return "", nil, nil
	case 1:
	default:
		return "", nil, errors.New("more than one Content-Type")
	}
	if strings.TrimSpace(vs[0]) == "" {
		return "", nil, nil
	}
	mt, params, err := mime.ParseMediaType(vs[0])
	if err != nil {
		return "", nil, errors.New("a Content-Type that does not parse")
	}
	return strings.ToLower(mt), params, nil
}

// bodyOverride is why body (a request body read whole, under rules that
// name methods) may override the method for some framework, or "". It
// reads the body as every framework may read it by its content type: a
// form (also with no content type: Rack parses a POST without one as a
// form), multipart (every part's Content-Disposition, by Go's parser and
// line by line), JSON (Laravel merges a JSON body's top-level keys into
// the fields "_method" is read from). Other types no framework reads
// fields from. A compressed form or JSON body cannot be judged.
func bodyOverride(h http.Header, body []byte) string {
	mt, params, err := contentType(h)
	if err != nil {
		return "the body has " + err.Error() + " and cannot be judged"
	}
	form, multi, isJSON := fieldKinds(mt)
	if !form && !multi && !isJSON {
		return ""
	}
	if len(h.Values("Content-Encoding")) > 0 {
		return "a compressed form or JSON body cannot be judged when the credential's methods are limited"
	}
	const why = "a method override in the body is not allowed when the credential's methods are limited"
	if multi {
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			l := strings.ToLower(strings.TrimSpace(string(line)))
			if strings.HasPrefix(l, "content-disposition") && strings.Contains(foldLetters(l), "method") {
				return why
			}
		}
		mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
		for {
			p, err := mr.NextRawPart()
			if err == io.EOF {
				break
			}
			if err != nil || params["boundary"] == "" {
				return "a multipart body that does not parse cannot be judged"
			}
			for _, cd := range p.Header.Values("Content-Disposition") {
				if strings.Contains(foldLetters(cd), "method") || isOverrideKey(p.FormName()) {
					return why
				}
			}
		}
		return ""
	}
	if isJSON {
		return jsonOverride(body, why)
	}
	return formFields(string(body), func(key bool, s string) string {
		if key && isOverrideKey(s) {
			return why
		}
		return ""
	})
}

// fieldKinds says how frameworks may read fields from a body of media
// type mt ("" when none is sent): as a form (also with no type: Rack
// parses a POST without one as a form), as multipart, as JSON. Broad on
// purpose: any type naming "form", "urlencoded" or "json".
func fieldKinds(mt string) (form, multi, isJSON bool) {
	return mt == "" || strings.Contains(mt, "form") || strings.Contains(mt, "urlencoded"),
		strings.HasPrefix(mt, "multipart/"), strings.Contains(mt, "json")
}

// bodyHasFields reports whether a body sent with header h must be read
// before it is forwarded under rules that name methods: a framework may
// read fields (an override) from it, or its type cannot be told (then
// bodyOverride refuses it). Any other body (a file, a pack, an image)
// streams as it comes, whatever its size.
func bodyHasFields(h http.Header) bool {
	mt, _, err := contentType(h)
	if err != nil {
		return true
	}
	form, multi, isJSON := fieldKinds(mt)
	return form || multi || isJSON
}

// jsonOverride is why a JSON body overrides the method: a top-level key
// that is an override key. A body that is not exactly one JSON value
// cannot be judged (a lenient parser may read what Go's does not).
func jsonOverride(body []byte, why string) string {
	d := json.NewDecoder(bytes.NewReader(body))
	tok, err := d.Token()
	if err != nil {
		return "a JSON body that does not parse cannot be judged"
	}
	if delim, ok := tok.(json.Delim); ok && delim == '{' {
		for d.More() {
			kt, err := d.Token()
			if err != nil {
				return "a JSON body that does not parse cannot be judged"
			}
			k, _ := kt.(string)
			if isOverrideKey(k) {
				return why
			}
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return "a JSON body that does not parse cannot be judged"
			}
		}
		if _, err := d.Token(); err != nil {
			return "a JSON body that does not parse cannot be judged"
		}
	} else if _, isDelim := tok.(json.Delim); isDelim {
		var skip []json.RawMessage
		if err := json.Unmarshal(body, &skip); err != nil {
			return "a JSON body that does not parse cannot be judged"
		}
		return ""
	}
	if _, err := d.Token(); err != io.EOF {
		return "a JSON body must be one JSON value"
	}
	return ""
}

// UploadPackType is the content type of git's smart-HTTP fetch request.
const UploadPackType = "application/x-git-upload-pack-request"

// uploadPackBody is why body is not git's fetch request, or "": a stream
// of pkt-lines (four hex digits of length, then the data; "0000", "0001"
// and "0002" alone), whole, plain or in one gzip member.
func uploadPackBody(h http.Header, body []byte) string {
	switch enc := h.Values("Content-Encoding"); {
	case len(enc) == 0:
	case len(enc) == 1 && strings.EqualFold(strings.TrimSpace(enc[0]), "gzip"):
		// A bytes.Reader is an io.ByteReader, so the gzip reader reads no
		// byte past its member: what is left in br is what follows it.
		br := bytes.NewReader(body)
		zr, err := gzip.NewReader(br)
		if err != nil {
			return "git's fetch request: its gzip body does not parse"
		}
		zr.Multistream(false)
		plain, err := io.ReadAll(io.LimitReader(zr, MaxJudgedBody+1))
		if err != nil || len(plain) > MaxJudgedBody {
			return "git's fetch request: its gzip body does not parse or is too large"
		}
		if br.Len() != 0 {
			return "git's fetch request: bytes after its gzip body"
		}
		body = plain
	default:
		return "git's fetch request: only a plain or gzip body"
	}
	if !pktLines(body) {
		return "git's fetch request: the body is not a pkt-line stream"
	}
	return ""
}

// pktLines reports whether b is a non-empty sequence of whole pkt-lines.
func pktLines(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for len(b) > 0 {
		if len(b) < 4 {
			return false
		}
		var n int
		for _, c := range b[:4] {
			switch {
			case c >= '0' && c <= '9':
				n = n<<4 | int(c-'0')
			case c >= 'a' && c <= 'f':
				n = n<<4 | int(c-'a'+10)
			default:
				return false
			}
		}
		switch {
		case n <= 2:
			n = 4 // flush, delimiter, response end
		case n < 4 || n > len(b):
			return false
		}
		b = b[n:]
	}
	return true
}
