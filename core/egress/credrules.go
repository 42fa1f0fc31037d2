package egress

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// RefusedRule: a valid token and credential, but the request is outside
// the credential's rules (see [CredentialRules]). Unlike the other
// refusals it names the credential, the method and the path class: it is
// a use the user narrowed on purpose, and an attempt past it is news.
const RefusedRule CredentialRefusal = "rule"

// CredentialRules narrow what a brokered credential may be used for. They
// come from the trusted config only ([credentials.NAME] methods, paths,
// read_only); the zero value allows every request the upstream accepts.
// Every rule set must pass; a request outside any is refused (403) and
// logged with [RefusedRule].
//
// Rules are matched on the request's path below the upstream's base path
// (REST of /corral/credential/TOKEN/NAME/REST), decoded: the broker has
// already refused paths that are not clean or that hold an encoded "/",
// "." or "\" (credentialRest), and decoding may not introduce a control
// character. Paths match case-sensitively and on segment boundaries
// (fail closed: a server that folds case sees fewer paths allowed, never
// more); the git push checks of ReadOnly fold case (fail closed the other
// way).
type CredentialRules struct {
	// Methods are the HTTP methods allowed (upper case); empty allows any.
	Methods []string
	// Paths are path prefixes allowed, each starting with "/": "/org/repo"
	// allows "/org/repo" and everything below "/org/repo/", never
	// "/org/repository". Empty allows any path.
	Paths []string
	// ReadOnly allows only reads: GET, HEAD and OPTIONS, and git's fetch
	// over smart HTTP (POST .../git-upload-pack). A push is refused in
	// both of its requests: GET .../info/refs?service=git-receive-pack
	// and POST .../git-receive-pack.
	ReadOnly bool
}

// RuleMethods are the methods a rule may name.
var RuleMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// MaxRulePaths caps the path prefixes of one credential.
const MaxRulePaths = 64

// methodOverrideHeaders make some servers treat a request as another
// method; a request carrying one is refused when a rule limits methods.
var methodOverrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override"}

// IsZero reports whether r allows everything.
func (r *CredentialRules) IsZero() bool {
	return r == nil || len(r.Methods) == 0 && len(r.Paths) == 0 && !r.ReadOnly
}

// Validate checks rules as the config may write them, all problems at once.
func (r *CredentialRules) Validate() error {
	if r == nil {
		return nil
	}
	var errs []error
	for i, m := range r.Methods {
		switch {
		case !slices.Contains(RuleMethods, m):
			errs = append(errs, fmt.Errorf("method %q: use one of %s (upper case)", truncate(m, 16), strings.Join(RuleMethods, ", ")))
		case slices.Contains(r.Methods[:i], m):
			errs = append(errs, fmt.Errorf("method %q twice", m))
		}
	}
	if len(r.Paths) > MaxRulePaths {
		errs = append(errs, fmt.Errorf("%d paths: at most %d", len(r.Paths), MaxRulePaths))
	}
	for i, p := range r.Paths {
		if err := CheckRulePath(p); err != nil {
			errs = append(errs, err)
		} else if slices.Contains(r.Paths[:i], p) {
			errs = append(errs, fmt.Errorf("path %q twice", p))
		}
	}
	return errors.Join(errs...)
}

// CheckRulePath checks one path prefix of a rule: it starts with "/", is
// clean (no ".", ".." or empty segment; a trailing "/" is allowed), and
// holds only printable ASCII other than "%", "\", "?" and "#" (a prefix is
// written decoded, as it is matched).
func CheckRulePath(p string) error {
	if !strings.HasPrefix(p, "/") || len(p) > 1024 {
		return fmt.Errorf("path %q: must start with / (below the upstream's base path), at most 1024 bytes", truncate(p, 64))
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= 0x20 || c >= 0x7f || strings.IndexByte(`%\?#`, c) >= 0 {
			return fmt.Errorf("path %q: byte %q is not allowed (write the path decoded, printable ASCII, no %%, \\, ? or #)", truncate(p, 64), c)
		}
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	if clean != p {
		return fmt.Errorf("path %q: must be clean (no ., .. or //); did you mean %q?", truncate(p, 64), clean)
	}
	return nil
}

// decodeRulePath decodes rest (a path credentialRest accepted) for rule
// matching. It refuses what decoding could turn into something the
// upstream reads otherwise: bad escapes, control bytes, a path no longer
// clean.
func decodeRulePath(rest string) (string, error) {
	dec, err := url.PathUnescape(rest)
	if err != nil {
		return "", errors.New("the path has a bad escape")
	}
	for i := 0; i < len(dec); i++ {
		if c := dec[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return "", errors.New("the decoded path holds a control character or \\")
		}
	}
	clean := path.Clean(dec)
	if strings.HasSuffix(dec, "/") && clean != "/" {
		clean += "/"
	}
	if clean != dec {
		return "", errors.New("the decoded path is not clean")
	}
	return dec, nil
}

// permit decides a request against the rules: "" when allowed, else why
// not, in words the box's user can act on (no secret, no path text).
func (r *CredentialRules) permit(method string, h http.Header, rest, rawQuery string) string {
	if r.IsZero() {
		return ""
	}
	dec, err := decodeRulePath(rest)
	if err != nil {
		return err.Error()
	}
	if len(r.Methods) > 0 || r.ReadOnly {
		for _, o := range methodOverrideHeaders {
			if _, ok := h[o]; ok {
				return "a method override header (" + o + ") is not allowed when the credential's methods are limited"
			}
		}
	}
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, method) {
		return fmt.Sprintf("method %s is not allowed (methods: %s)", methodClass(method), strings.Join(r.Methods, ", "))
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(p string) bool { return pathUnder(dec, p) }) {
		return "the path is outside the credential's paths (" + strings.Join(r.Paths, ", ") + ")"
	}
	if r.ReadOnly {
		if why := readOnlyRefusal(method, dec, rawQuery); why != "" {
			return "read-only: " + why
		}
	}
	return ""
}

// pathUnder reports whether dec is prefix p or below it, on a segment
// boundary.
func pathUnder(dec, p string) bool {
	base := strings.TrimSuffix(p, "/")
	return dec == base || strings.HasPrefix(dec, base+"/")
}

// readOnlyRefusal is why a request is not a read, or "". A push is
// recognised wherever "receive-pack" appears, in any case, in the decoded
// path or in a query key or value (decoded): one rule for both, broad on
// purpose (a server that routes a variant of the service name pushes all
// the same); reads are the safe methods and the exact fetch endpoint.
func readOnlyRefusal(method, dec, rawQuery string) string {
	if namesPush(dec) {
		return "a git push (git-receive-pack) is refused"
	}
	if rawQuery != "" {
		q, err := url.ParseQuery(rawQuery)
		if err != nil {
			return "the query does not parse"
		}
		for k, vs := range q {
			for _, v := range append(vs, k) {
				if namesPush(v) {
					return "a git push (service=git-receive-pack) is refused"
				}
			}
		}
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	case http.MethodPost:
		if strings.HasSuffix(dec, "/git-upload-pack") {
			return "" // git fetch over smart HTTP
		}
	}
	return fmt.Sprintf("method %s is not a read", methodClass(method))
}

// namesPush reports whether s (a decoded path, query key or value) names
// git's push service: "receive-pack" anywhere, in any case.
func namesPush(s string) bool {
	return strings.Contains(strings.ToLower(s), "receive-pack")
}

// Describe is the rules in one line for display ("" when there are none).
func (r *CredentialRules) Describe() string {
	if r.IsZero() {
		return ""
	}
	var parts []string
	if r.ReadOnly {
		parts = append(parts, "read-only")
	}
	if len(r.Methods) > 0 {
		parts = append(parts, "methods "+strings.Join(r.Methods, ","))
	}
	if len(r.Paths) > 0 {
		parts = append(parts, "paths "+strings.Join(r.Paths, ","))
	}
	return strings.Join(parts, "; ")
}
