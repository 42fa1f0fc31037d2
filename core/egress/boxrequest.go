package egress

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/corral-dev/corral/core/display"
)

// The request channel: a box asks its user for a host (or a forwarded
// port) it needs, with a reason. A program in the box (guest/corral-request.sh)
// posts a small form to its broker, on the path the box already has to it
// (the proxy address), at RequestPath:
//
//	POST /corral/request
//	Content-Type: application/x-www-form-urlencoded
//
//	what=egress&target=api.example.test:8443&why=...&exe=...&pid=...&chain=...&session=...
//
// Everything in it is hostile. [ParseBoxRequest] decodes it strictly
// (known keys only, each at most once, a capped body), the target through
// the one allow-list grammar ([ParseAllowEntry]), the reason and the
// process fields cleaned of control and format runes and capped. The
// broker records an accepted request ([RequestConfig.Record]; the box's
// egress log) and keeps it pending for a while, so that a connection to
// the requested host is held ([Server] admit) until the user answers. A
// request never grants anything: only an approval (corral allow, the
// menu's Allow) changes the policy. A box can file at most a few requests
// in a burst (a token bucket) and have at most MaxPending waiting.

// RequestPath is the path of the request channel.
const RequestPath = "/corral/request"

// KindRequest is the log kind of a request a box filed.
const KindRequest Kind = "request"

// RequestWhat is what a box asks for.
type RequestWhat string

// What a box can ask for.
const (
	// RequestEgress: reaching a host (an exact name, optionally with a port).
	RequestEgress RequestWhat = "egress"
	// RequestPort: forwarding one of its ports to the host (corral port).
	RequestPort RequestWhat = "port"
)

// Caps of the request channel.
const (
	// MaxRequestBody caps a request's form.
	MaxRequestBody = 4096
	// MaxWhy caps a reason, in runes, after cleaning.
	MaxWhy = 200
	// MaxWhoField caps each process field (exe, session), in runes.
	MaxWhoField = 64
	// MaxChain caps the parent chain, in runes.
	MaxChain = 160
)

// Attribution names the process in the box that asked. It comes from the
// box and is shown, never decided on: a process in the box can claim to
// be anything (docs/SECURITY.md).
type Attribution struct {
	Exe     string `json:"exe,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Chain   string `json:"chain,omitempty"` // parents, nearest first: "bash < sshd"
	Session string `json:"session,omitempty"`
}

// IsZero reports whether nothing is known about the process.
func (a Attribution) IsZero() bool { return a == Attribution{} }

// String is the attribution for a sentence: "node (pid 42, bash < sshd,
// session tests)", or "" when nothing is known. It is built from cleaned
// fields; show it through core/display still.
func (a Attribution) String() string {
	if a.IsZero() {
		return ""
	}
	exe := a.Exe
	if exe == "" {
		exe = "a process"
	}
	var extra []string
	if a.PID > 0 {
		extra = append(extra, "pid "+strconv.Itoa(a.PID))
	}
	if a.Chain != "" {
		extra = append(extra, a.Chain)
	}
	if a.Session != "" {
		extra = append(extra, "session "+a.Session)
	}
	if len(extra) == 0 {
		return exe
	}
	return exe + " (" + strings.Join(extra, ", ") + ")"
}

// BoxRequest is one request a box filed, as decoded and cleaned.
type BoxRequest struct {
	Time time.Time
	What RequestWhat
	// Entry is the canonical allow-list entry asked for (an exact host,
	// with its port when one was given) for RequestEgress; "" for a port.
	Entry string
	// Port is the guest port asked for (RequestPort).
	Port int
	Why  string
	Who  Attribution
}

// Key names what is asked for: the entry, or "port N".
func (r BoxRequest) Key() string {
	if r.What == RequestPort {
		return "port " + strconv.Itoa(r.Port)
	}
	return r.Entry
}

// requestKeys are the form's keys; each may appear at most once.
var requestKeys = map[string]bool{"what": true, "target": true, "why": true, "exe": true, "pid": true, "chain": true, "session": true}

// ParseBoxRequest decodes a request's form body (see [RequestPath]). It
// refuses unknown and repeated keys, a missing what, target or why, a
// target outside the grammar (for egress an exact host, optionally with a
// port: no wildcard, any-port or range; for a port a number from 1 to
// 65535), and a reason that is empty once cleaned. Every string it returns
// is valid UTF-8 without control or format runes ([display.Unsafe]),
// whitespace runs folded to one space, and capped.
func ParseBoxRequest(body []byte) (BoxRequest, error) {
	var r BoxRequest
	if len(body) > MaxRequestBody {
		return r, fmt.Errorf("request: more than %d bytes", MaxRequestBody)
	}
	seen := map[string]string{}
	for pair := range strings.SplitSeq(string(body), "&") {
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(k)
		if err != nil || !requestKeys[key] {
			return r, fmt.Errorf("request: unknown field %q", display.Text(key, 32))
		}
		if _, dup := seen[key]; dup {
			return r, fmt.Errorf("request: field %q given twice", key)
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return r, fmt.Errorf("request: field %q: bad encoding", key)
		}
		seen[key] = val
	}
	switch what := RequestWhat(seen["what"]); what {
	case RequestEgress:
		r.What = what
		e, err := ParseAllowEntry(seen["target"])
		switch {
		case err != nil:
			return r, fmt.Errorf("request: target %q: %w", display.Text(seen["target"], 64), err)
		case !e.OneHost():
			return r, fmt.Errorf("request: target %q: ask for one host (host or host:port), not a wildcard, any port or range", display.Text(seen["target"], 64))
		}
		r.Entry = e.String()
	case RequestPort:
		r.What = what
		p, err := parseRequestPort(seen["target"])
		if err != nil {
			return r, fmt.Errorf("request: port %q: %w", display.Text(seen["target"], 16), err)
		}
		r.Port = p
	case "":
		return r, errors.New("request: what is missing (egress or port)")
	default:
		return r, fmt.Errorf("request: what %q: want egress or port", display.Text(string(what), 16))
	}
	r.Why = CleanText(seen["why"], MaxWhy)
	if r.Why == "" {
		return r, errors.New("request: a reason (why) is required")
	}
	r.Who.Exe = CleanText(seen["exe"], MaxWhoField)
	r.Who.Chain = CleanText(seen["chain"], MaxChain)
	r.Who.Session = CleanText(seen["session"], MaxWhoField)
	if s := seen["pid"]; s != "" {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 || len(s) > 10 || s[0] == '0' {
			return r, fmt.Errorf("request: pid %q: want a positive number", display.Text(s, 16))
		}
		r.Who.PID = pid
	}
	return r, nil
}

// parseRequestPort parses a port: 1 to 65535, decimal digits only.
func parseRequestPort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, errors.New("want a number from 1 to 65535")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("want a number from 1 to 65535")
		}
	}
	p, _ := strconv.Atoi(s)
	if p < 1 || p > 65535 {
		return 0, errors.New("want a number from 1 to 65535")
	}
	return p, nil
}

// CleanText makes box text fit to store: invalid UTF-8 and every rune
// [display.Unsafe] names are dropped, runs of whitespace become one space,
// the ends are trimmed and the result is at most limit runes (at least 2) (cut on a rune
// boundary, ending in "…" when cut). Display still goes through
// core/display: CleanText is the storage edge, not the display edge.
func CleanText(s string, limit int) string {
	limit = max(limit, 2) // a rune and the ellipsis
	rs := make([]rune, 0, min(len(s), limit+1))
	space := false
	for _, r := range s { // invalid bytes decode as utf8.RuneError, which is unsafe
		if unicode.IsSpace(r) {
			space = len(rs) > 0
			continue
		}
		if display.Unsafe(r) {
			continue
		}
		if space {
			rs = append(rs, ' ')
			space = false
		}
		rs = append(rs, r)
		if len(rs) > limit {
			break
		}
	}
	if len(rs) > limit {
		rs = append(rs[:limit-1], '…')
	}
	return string(rs)
}

// RequestConfig configures a [RequestInbox]. Zero fields take the defaults.
type RequestConfig struct {
	// Record stores an accepted request durably (the box's egress log)
	// before the box is told it was filed; an error refuses the request.
	Record func(BoxRequest) error
	// Burst and Every are the token bucket: at most Burst requests at
	// once, then one per Every. Defaults 5 and 10 s.
	Burst int
	Every time.Duration
	// MaxPending caps the requests waiting for an answer; default 16.
	MaxPending int
	// PendingFor is how long the broker treats a request as waiting (and
	// holds connections to its host); default 10 minutes. The user can
	// still answer later: the request stays in the log and the inbox.
	PendingFor time.Duration
	// Hold is how long a connection to a requested host waits for the
	// answer; default 60 s.
	Hold time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// RequestInbox is a broker's side of the request channel: the rate limit
// and the requests waiting for an answer. It is safe for concurrent use.
type RequestInbox struct {
	cfg RequestConfig

	mu      sync.Mutex
	tokens  float64
	last    time.Time
	pending map[string]*pendingRequest // by BoxRequest.Key
	wake    func()                     // the server's broadcast
}

type pendingRequest struct {
	req    BoxRequest
	until  time.Time
	policy *Policy // the entry alone, for matching a connection
}

// NewRequestInbox returns an inbox with cfg's defaults filled in.
func NewRequestInbox(cfg RequestConfig) *RequestInbox {
	if cfg.Burst <= 0 {
		cfg.Burst = 5
	}
	if cfg.Every <= 0 {
		cfg.Every = 10 * time.Second
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 16
	}
	if cfg.PendingFor <= 0 {
		cfg.PendingFor = 10 * time.Minute
	}
	if cfg.Hold <= 0 {
		cfg.Hold = 60 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &RequestInbox{cfg: cfg, tokens: float64(cfg.Burst), pending: map[string]*pendingRequest{}}
}

func (in *RequestInbox) setWake(fn func()) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.wake = fn
}

// Errors of [RequestInbox.File], each answered with its own status.
var (
	ErrRequestRate = errors.New("too many requests; wait and ask again")
	ErrRequestFull = errors.New("too many requests are waiting for an answer")
)

// File takes a token and records r as pending. A request for what is
// already pending replaces it (its reason and time), without a new
// token-free slot: repeats still cost tokens.
func (in *RequestInbox) File(r BoxRequest) error {
	now := in.cfg.Now()
	in.mu.Lock()
	in.expireLocked(now)
	if !in.last.IsZero() {
		in.tokens = min(float64(in.cfg.Burst), in.tokens+float64(now.Sub(in.last))/float64(in.cfg.Every))
	}
	in.last = now
	if in.tokens < 1 {
		in.mu.Unlock()
		return ErrRequestRate
	}
	_, again := in.pending[r.Key()]
	if !again && len(in.pending) >= in.cfg.MaxPending {
		in.mu.Unlock()
		return ErrRequestFull
	}
	in.tokens--
	in.mu.Unlock()
	r.Time = now
	var pol *Policy
	if r.What == RequestEgress {
		p, err := ParsePolicy([]string{r.Entry}, nil)
		if err != nil {
			return fmt.Errorf("request: %w", err) // cannot happen: Entry parsed
		}
		pol = p
	}
	if in.cfg.Record != nil {
		if err := in.cfg.Record(r); err != nil {
			return fmt.Errorf("recording the request: %w", err)
		}
	}
	in.mu.Lock()
	in.pending[r.Key()] = &pendingRequest{req: r, until: now.Add(in.cfg.PendingFor), policy: pol}
	wake := in.wake
	in.mu.Unlock()
	if wake != nil {
		wake()
	}
	return nil
}

func (in *RequestInbox) expireLocked(now time.Time) {
	for k, p := range in.pending {
		if !now.Before(p.until) {
			delete(in.pending, k)
		}
	}
}

// Pending returns the requests waiting now, in no order.
func (in *RequestInbox) Pending() []BoxRequest {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.expireLocked(in.cfg.Now())
	out := make([]BoxRequest, 0, len(in.pending))
	for _, p := range in.pending {
		out = append(out, p.req)
	}
	return out
}

// Settle ends the wait of the requests for which answered returns true
// (the user denied them), and wakes the connections held for them, which
// are then refused.
func (in *RequestInbox) Settle(answered func(BoxRequest) bool) {
	in.mu.Lock()
	n := 0
	for k, p := range in.pending {
		if answered(p.req) {
			delete(in.pending, k)
			n++
		}
	}
	wake := in.wake
	in.mu.Unlock()
	if n > 0 && wake != nil {
		wake()
	}
}

// asked returns the key of the pending egress request a connection to
// auth matches, or "".
func (in *RequestInbox) asked(kind Kind, auth Authority) string {
	in.mu.Lock()
	defer in.mu.Unlock()
	now := in.cfg.Now()
	for k, p := range in.pending {
		if p.policy == nil || !now.Before(p.until) {
			continue
		}
		if p.policy.Decide(Request{Kind: kind, Host: auth.Host, Port: auth.Port}).Allowed {
			return k
		}
	}
	return ""
}

// stillPending reports whether the request under key still waits.
func (in *RequestInbox) stillPending(key string) bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	p := in.pending[key]
	return p != nil && in.cfg.Now().Before(p.until)
}

// done drops the request under key: a connection it held was let through,
// so the user answered it with an approval.
func (in *RequestInbox) done(key string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	delete(in.pending, key)
}

// isBoxRequest reports whether req is addressed to the request channel:
// origin-form, or an absolute URI naming the broker itself.
func (s *Server) isBoxRequest(req *http.Request) bool {
	if s.cfg.Requests == nil || req.URL.Path != RequestPath {
		return false
	}
	if req.URL.Scheme == "" && req.URL.Host == "" {
		return true
	}
	return req.URL.Scheme == "http" && s.selfHost(req.URL.Host)
}

// handleBoxRequest serves the request channel and reports whether the
// connection may carry another request (never: each answer closes it).
func (s *Server) handleBoxRequest(nc net.Conn, br *bufio.Reader, req *http.Request) bool {
	in := s.cfg.Requests
	read := false // the body was read: nothing is left to drain
	answer := func(status int, msg string) bool {
		s.writeError(nc, status, "corral: "+msg+"\n")
		if read && br.Buffered() == 0 {
			nc.Close()
		} else {
			lingerClose(nc, br)
		}
		return false
	}
	switch {
	case req.URL.Host == "" && !s.selfHost(req.Host):
		// DNS rebinding: a web page on the host cannot file requests.
		return answer(http.StatusForbidden, "request: the Host header does not name this broker")
	case req.Method != http.MethodPost:
		return answer(http.StatusMethodNotAllowed, "request: use POST")
	case req.ContentLength > MaxRequestBody:
		return answer(http.StatusRequestEntityTooLarge, fmt.Sprintf("request: more than %d bytes", MaxRequestBody))
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxRequestBody+1))
	if err != nil {
		return answer(http.StatusBadRequest, "request: reading the body failed")
	}
	read = len(body) <= MaxRequestBody
	r, err := ParseBoxRequest(body)
	if err != nil {
		return answer(http.StatusBadRequest, err.Error())
	}
	switch err := in.File(r); {
	case errors.Is(err, ErrRequestRate):
		return answer(http.StatusTooManyRequests, "request: "+err.Error())
	case errors.Is(err, ErrRequestFull):
		return answer(http.StatusServiceUnavailable, "request: "+err.Error())
	case err != nil:
		s.logger.Warn("filing a box request", "err", err)
		return answer(http.StatusInternalServerError, "request: could not be recorded (see the broker log)")
	}
	what := "egress to " + r.Entry
	if r.What == RequestPort {
		what = "forwarding port " + strconv.Itoa(r.Port)
	}
	return answer(http.StatusAccepted, "asked the user for "+what+"; nothing is allowed until they answer"+
		" (a connection to it waits up to "+in.cfg.Hold.String()+" for the answer)")
}

// ProxySession returns the session a client names in its proxy
// credentials, as the box's proxy settings send them in a corral session
// (guest/provision/40-network.sh: user "session-ID"), as an Attribution;
// zero when there is none or it is not of that form. It is the client's
// word: any process in the box can name any session, so it is logged and
// shown, never decided on.
func ProxySession(h http.Header) Attribution {
	v := h.Get("Proxy-Authorization")
	b64, ok := strings.CutPrefix(v, "Basic ")
	if !ok || len(b64) > 256 {
		return Attribution{}
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return Attribution{}
	}
	user, _, _ := strings.Cut(string(raw), ":")
	id, ok := strings.CutPrefix(user, "session-")
	if !ok || id == "" || len(id) > MaxWhoField {
		return Attribution{}
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return Attribution{}
		}
	}
	return Attribution{Session: id}
}
