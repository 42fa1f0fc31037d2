package egress

import (
	"errors"
	"fmt"
	"net/http"
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
// Rules judge the request's canonical reading (canonical.go), which is
// also what the broker forwards: the path below the upstream's base path
// decoded once (anything a second reading could turn into a separator or
// a dot segment refused before the rules run), the method with every
// override form refused when the rules name methods, and a body the rules
// must see read whole first. Paths match case-sensitively and on segment
// boundaries (fail closed: a server that folds case sees fewer paths
// allowed, never more); the git push checks of ReadOnly fold case (fail
// closed the other way).
type CredentialRules struct {
	// Methods are the HTTP methods allowed (upper case); empty allows any.
	Methods []string
	// Paths are path prefixes allowed, each starting with "/": "/org/repo"
	// allows "/org/repo" and everything below "/org/repo/", never
	// "/org/repository". Empty allows any path.
	Paths []string
	// ReadOnly allows only reads: GET, HEAD and OPTIONS without a body,
	// and, on a git host's credential (Git), git's fetch over smart HTTP
	// by its protocol (POST .../git-upload-pack with no query, git's
	// request content type and a pkt-line body). A push is refused in
	// both of its requests: GET .../info/refs?service=git-receive-pack
	// and POST .../git-receive-pack.
	ReadOnly bool
	// Git marks a git host's credential (core/config sets it for header
	// = "basic", the git hosts' header): only then does ReadOnly admit
	// git's fetch, a POST; on any other upstream a POST to a path that
	// ends in git-upload-pack may be a write (a file, a wiki page, a
	// package named so). It widens nothing by itself.
	Git bool
}

// RuleMethods are the methods a rule may name.
var RuleMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}

// MaxRulePaths caps the path prefixes of one credential.
const MaxRulePaths = 64

// IsZero reports whether r allows everything.
func (r *CredentialRules) IsZero() bool {
	return r == nil || len(r.Methods) == 0 && len(r.Paths) == 0 && !r.ReadOnly
}

// namesMethods reports whether the rules limit the method (methods or
// read_only): then every override form is refused.
func (r *CredentialRules) namesMethods() bool {
	return r != nil && (len(r.Methods) > 0 || r.ReadOnly)
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
// holds only printable ASCII other than "%", "\", "?", "#" and ";" (a
// prefix is written decoded, as it is matched, and the canonical reading
// refuses those in a path).
func CheckRulePath(p string) error {
	if !strings.HasPrefix(p, "/") || len(p) > 1024 {
		return fmt.Errorf("path %q: must start with / (below the upstream's base path), at most 1024 bytes", truncate(p, 64))
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c <= 0x20 || c >= 0x7f || strings.IndexByte(`%\?#;`, c) >= 0 {
			return fmt.Errorf("path %q: byte %q is not allowed (write the path decoded, printable ASCII, no %%, \\, ?, # or ;)", truncate(p, 64), c)
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

// permit decides a canonical request against the rules: "" when allowed,
// else why not, in words the box's user can act on (no secret, no path
// text); and what of the body must still be judged (judgeBody) before
// the request may be forwarded.
func (r *CredentialRules) permit(cr canonicalRequest) (string, bodyCheck) {
	if r.IsZero() {
		return "", bodyAsIs
	}
	check := bodyAsIs
	if r.namesMethods() {
		if h := overrideHeader(cr.header); h != "" {
			return "a method override header (" + quoteShort(h) + ") is not allowed when the credential's methods are limited", bodyAsIs
		}
		if why := overrideQuery(cr.rawQuery); why != "" {
			return why, bodyAsIs
		}
		if cr.body && bodyHasFields(cr.header) {
			check = bodyNoOverride
		}
	}
	if len(r.Methods) > 0 && !slices.Contains(r.Methods, cr.method) {
		return fmt.Sprintf("method %s is not allowed (methods: %s)", methodClass(cr.method), strings.Join(r.Methods, ", ")), bodyAsIs
	}
	if len(r.Paths) > 0 {
		if h := pathHeader(cr.header); h != "" {
			return "a header that may override the path (" + quoteShort(h) + ") is not allowed when the credential's paths are limited", bodyAsIs
		}
	}
	if len(r.Paths) > 0 && !slices.ContainsFunc(r.Paths, func(p string) bool { return pathUnder(cr.path, p) }) {
		return "the path is outside the credential's paths (" + strings.Join(r.Paths, ", ") + ")", bodyAsIs
	}
	if r.ReadOnly {
		why, c := r.readOnly(cr)
		if why != "" {
			return "read-only: " + why, bodyAsIs
		}
		if c != bodyAsIs {
			check = c
		}
	}
	return "", check
}

// judgeBody is why a body the rules asked to see (permit's bodyCheck),
// read whole, refuses the request, or "".
func judgeBody(check bodyCheck, h http.Header, body []byte) string {
	switch check {
	case bodyNoOverride:
		return bodyOverride(h, body)
	case bodyUploadPack:
		if why := uploadPackBody(h, body); why != "" {
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

// readOnly is why a canonical request is not a read, or "", and what of
// its body must be judged. A push is recognised wherever "receive-pack"
// appears, in any case, in the path or in any reading of a query key or
// value: one rule for both, broad on purpose (a server that routes a
// variant of the service name pushes all the same). Reads are the safe
// methods without a body and, on a git host's credential, git's fetch by
// its protocol.
func (r *CredentialRules) readOnly(cr canonicalRequest) (string, bodyCheck) {
	if namesPush(cr.path) {
		return "a git push (git-receive-pack) is refused", bodyAsIs
	}
	if why := formFields(cr.rawQuery, func(_ bool, s string) string {
		if namesPush(s) {
			return "a git push (service=git-receive-pack) is refused"
		}
		return ""
	}); why != "" {
		return why, bodyAsIs
	}
	switch cr.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		if cr.body {
			return fmt.Sprintf("a %s with a body is refused (a server may act on it)", cr.method), bodyAsIs
		}
		return "", bodyAsIs
	case http.MethodPost:
		if !r.Git {
			return "method POST is not a read (only a git host's credential, header = \"basic\", admits git's fetch)", bodyAsIs
		}
		if !strings.HasSuffix(cr.path, "/git-upload-pack") {
			return "method POST is not a read (the one POST allowed is git's fetch, .../git-upload-pack)", bodyAsIs
		}
		if cr.rawQuery != "" {
			return "git's fetch request has no query", bodyAsIs
		}
		if mt, _, err := contentType(cr.header); err != nil || mt != UploadPackType {
			return "git's fetch request has content type " + UploadPackType, bodyAsIs
		}
		if !cr.body {
			return "git's fetch request has a body", bodyAsIs
		}
		return "", bodyUploadPack // git fetch over smart HTTP, once its body is seen
	}
	return fmt.Sprintf("method %s is not a read", methodClass(cr.method)), bodyAsIs
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
