package egress

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/core/jsonl"
)

// DecisionLogger receives every policy decision the [Server] makes. It must
// be safe for concurrent use and should not block for long: it is called on
// the request path.
type DecisionLogger interface {
	LogDecision(Decision)
}

// Entry kinds beyond [KindConnect] and [KindHTTP].
const (
	KindSessionStart Kind = "session-start"
	KindSessionEnd   Kind = "session-end"
)

// Entry is one line of the egress decision log. Decision lines have the
// fields time, box, kind, host, port, ip, allowed and reason (always all of
// them); session markers have time, box, kind and session.
type Entry struct {
	Time    time.Time `json:"time"`
	Box     string    `json:"box"`
	Kind    Kind      `json:"kind"`
	Host    string    `json:"host"`
	Port    int       `json:"port"`
	IP      string    `json:"ip"`
	Allowed bool      `json:"allowed"`
	Reason  Reason    `json:"reason"`
	Session string    `json:"session,omitempty"`
	// Count is how many identical denials this line stands for (see
	// [DecisionLog]); 0 or absent means one.
	Count int `json:"count,omitempty"`
	// HeldMS marks the outcome of a held request (see [Config.Hold]): how
	// long it waited, in milliseconds (at least 1). The denial that began
	// the hold was logged before, without it; so a held request that ends
	// denied has two lines, and an instant denial one without HeldMS.
	HeldMS int64 `json:"held_ms,omitempty"`
	// Request lines (kind "request", see [RequestPath]) say what the box
	// asked for (What, and Request: the entry or "port N"), why, and which
	// process in the box says it asked. Who is also on a decision line
	// whose client named its session ([ProxySession]). Who is the box's
	// word, for display only.
	What    RequestWhat  `json:"what,omitempty"`
	Request string       `json:"request,omitempty"`
	Why     string       `json:"why,omitempty"`
	Who     *Attribution `json:"who,omitempty"`
	// SNI is the TLS server name of a tunnel refused for it
	// (ReasonSNIMismatch): canonical, at most MaxLoggedHost bytes.
	SNI string `json:"sni,omitempty"`
	// Detail says why the upstream proxy did not carry an allowed
	// connection (ReasonProxyRefused, ReasonProxyFailed): at most
	// MaxLoggedHost bytes.
	Detail string `json:"detail,omitempty"`
}

// Held is how long the request of a decision line waited in a hold; 0 when
// it was decided at once (or the line began a hold).
func (e Entry) Held() time.Duration { return time.Duration(e.HeldMS) * time.Millisecond }

// N is the number of decisions the entry stands for: Count, at least 1.
func (e Entry) N() int { return max(e.Count, 1) }

// IsDecision reports whether e is a connect or http decision line.
func (e Entry) IsDecision() bool { return e.Kind == KindConnect || e.Kind == KindHTTP }

// MarshalJSON writes decision lines with their fixed fields and session
// markers with only theirs.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.Kind == KindRequest {
		type plain Entry // no methods: no recursion
		return json.Marshal(plain(e))
	}
	if e.IsDecision() {
		type plain Entry // no methods: no recursion
		p := plain(e)
		p.Session = ""
		p.What, p.Request, p.Why = "", "", ""
		if p.Count == 1 {
			p.Count = 0
		}
		return json.Marshal(p)
	}
	return json.Marshal(struct {
		Time    time.Time `json:"time"`
		Box     string    `json:"box"`
		Kind    Kind      `json:"kind"`
		Session string    `json:"session"`
	}{e.Time, e.Box, e.Kind, e.Session})
}

// Appender appends one JSON value as one line; *jsonl.Writer implements it.
type Appender interface {
	Append(v any) error
}

// DecisionLog turns decisions into log [Entry] lines for one box.
//
// Denials are aggregated so that a box cannot flood the log: the first
// denial of a destination (kind, host, port, reason) in an interval is
// written at once, repeats within [DenyInterval] are counted, and the count
// is written as one line when the interval ends. Requests whose target did
// not parse are one destination per kind and reason, whatever their text.
// Allowed decisions are always written one by one.
type DecisionLog struct {
	box    string
	out    Appender
	logger *slog.Logger
	now    func() time.Time
	closer io.Closer

	mu      sync.Mutex
	pending map[denyKey]*pendingDeny
	stop    chan struct{}
	done    chan struct{}
}

// DenyInterval is the aggregation interval of repeated denials.
const DenyInterval = 10 * time.Second

// maxPending bounds the destinations aggregated at once; past it denials
// of new destinations are written one by one (still capped in length).
const maxPending = 4096

// MaxLoggedHost caps the request text written in a log line.
const MaxLoggedHost = 128

type denyKey struct {
	kind   Kind
	host   string
	port   int
	reason Reason
}

type pendingDeny struct {
	first Entry
	count int // repeats after the first line
	last  time.Time
}

var (
	_ DecisionLogger = (*DecisionLog)(nil)
	_ Appender       = (*jsonl.Writer)(nil)
)

// NewDecisionLog returns a logger that appends a line per decision for box to
// out. Append errors are reported to logger (nil discards them), never to the
// request.
func NewDecisionLog(box string, out Appender, logger *slog.Logger) *DecisionLog {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &DecisionLog{box: box, out: out, logger: logger, now: time.Now, pending: map[denyKey]*pendingDeny{}}
}

// startFlusher writes aggregated counts every DenyInterval until Close.
func (l *DecisionLog) startFlusher() {
	l.stop, l.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(l.done)
		t := time.NewTicker(DenyInterval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				l.Flush(false)
			case <-l.stop:
				l.Flush(true)
				return
			}
		}
	}()
}

// Flush writes the counts of aggregated denials whose interval ended (all
// of them with force) as one line each.
func (l *DecisionLog) Flush(force bool) {
	now := l.now()
	var out []Entry
	l.mu.Lock()
	for k, p := range l.pending {
		if !force && now.Sub(p.first.Time) < DenyInterval {
			continue
		}
		delete(l.pending, k)
		if p.count > 0 {
			e := p.first
			e.Time, e.Count = p.last, p.count
			out = append(out, e)
		}
	}
	l.mu.Unlock()
	for _, e := range out {
		l.write(e)
	}
}

// LogDecision appends one decision line, or counts a repeated denial.
func (l *DecisionLog) LogDecision(d Decision) {
	e := Entry{Time: d.Time, Box: l.box, Kind: d.Kind, Host: capText(d.Host), Port: d.Port,
		Allowed: d.Allowed, Reason: d.Reason, SNI: capText(d.SNI), Detail: capText(d.Detail)}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	if d.IP.IsValid() {
		e.IP = d.IP.String()
	}
	if d.Held > 0 {
		e.HeldMS = max(d.Held.Milliseconds(), 1)
	}
	if !d.Who.IsZero() {
		who := d.Who
		e.Who = &who
	}
	// The outcome of a hold is never folded into a count: there are at
	// most MaxHeld at once, and each says how long it waited.
	if !e.Allowed && e.HeldMS == 0 && l.pending != nil {
		k := denyKey{e.Kind, e.Host, e.Port, e.Reason}
		if e.Reason == ReasonMalformedAuthority || e.Reason == ReasonUserinfo {
			k.host, k.port = "", 0
		}
		l.mu.Lock()
		if p := l.pending[k]; p != nil && e.Time.Sub(p.first.Time) < DenyInterval {
			p.count++
			p.last = e.Time
			l.mu.Unlock()
			return
		} else if p != nil && p.count > 0 {
			// The interval ended without a flush: write its count first.
			c := p.first
			c.Time, c.Count = p.last, p.count
			delete(l.pending, k)
			l.mu.Unlock()
			l.write(c)
			l.mu.Lock()
		}
		if len(l.pending) < maxPending {
			l.pending[k] = &pendingDeny{first: e, last: e.Time}
		}
		l.mu.Unlock()
	}
	l.write(e)
}

// capText cuts request text for a log line at MaxLoggedHost bytes, on a
// UTF-8 boundary.
func capText(s string) string {
	if len(s) <= MaxLoggedHost {
		return s
	}
	s = s[:MaxLoggedHost]
	for len(s) > 0 && !utf8.RuneStart(s[len(s)-1]) {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0x80 { // a cut multi-byte rune
		s = s[:len(s)-1]
	}
	return s
}

func (l *DecisionLog) write(e Entry) {
	var err error
	if fastEncodable(e) {
		// Pre-encoded: the deny path is hot and reflection is not free,
		// nor is json.Marshal checking a RawMessage again.
		line := appendDecisionJSON(make([]byte, 0, 192), e)
		if ea, ok := l.out.(encodedAppender); ok {
			err = ea.AppendEncoded(line)
		} else {
			err = l.out.Append(json.RawMessage(line))
		}
	} else {
		err = l.out.Append(e)
	}
	if err != nil {
		l.logger.Warn("writing egress decision log", "err", err)
	}
}

// encodedAppender appends a line its caller encoded; *jsonl.Writer
// implements it.
type encodedAppender interface {
	AppendEncoded(line []byte) error
}

var _ encodedAppender = (*jsonl.Writer)(nil)

// plainJSON reports whether s needs no escaping in a JSON string.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// fastEncodable reports whether appendDecisionJSON encodes e exactly as
// json.Marshal would: a decision line whose text needs no escaping and
// that has nothing beyond the fields the fast encoder writes. Derived
// from the fields, not listed: with each written field cleared, what is
// left must be the zero Entry, so a field added to Entry (SNI was one the
// fast path once dropped) sends its lines down the general encoder until
// the fast encoder learns it.
func fastEncodable(e Entry) bool {
	if !e.IsDecision() || !plainJSON(e.Host) || !plainJSON(e.Box) || !plainJSON(e.IP) ||
		!plainJSON(string(e.Reason)) || e.Count < 0 || e.Count > 1 || !sessionOnly(e.Who) {
		return false
	}
	rest := e
	rest.Time, rest.Box, rest.Kind, rest.Host, rest.Port, rest.IP, rest.Allowed, rest.Reason, rest.Who = time.Time{}, "", "", "", 0, "", false, "", nil
	// MarshalJSON drops these from a decision line; a count of 1 is none.
	rest.Session, rest.What, rest.Request, rest.Why, rest.Count = "", "", "", "", 0
	return rest == Entry{}
}

// appendDecisionJSON encodes a decision entry exactly as json.Marshal would,
// without reflection: the deny path is hot.
func appendDecisionJSON(b []byte, e Entry) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","box":"`...)
	b = append(b, e.Box...)
	b = append(b, `","kind":"`...)
	b = append(b, e.Kind...)
	b = append(b, `","host":"`...)
	b = append(b, e.Host...)
	b = append(b, `","port":`...)
	b = strconv.AppendInt(b, int64(e.Port), 10)
	b = append(b, `,"ip":"`...)
	b = append(b, e.IP...)
	b = append(b, `","allowed":`...)
	b = strconv.AppendBool(b, e.Allowed)
	b = append(b, `,"reason":"`...)
	b = append(b, e.Reason...)
	if e.Who != nil {
		b = append(b, `","who":{"session":"`...)
		b = append(b, e.Who.Session...)
		return append(b, `"}}`...)
	}
	return append(b, `"}`...)
}

// sessionOnly reports whether who needs nothing but the fast encoding:
// absent, or a plain session alone (what a session's proxy credentials
// give every decision).
func sessionOnly(who *Attribution) bool {
	return who == nil || who.Exe == "" && who.PID == 0 && who.Chain == "" && who.Session != "" && plainJSON(who.Session)
}

// StartSession appends a session-start marker.
func (l *DecisionLog) StartSession(id string) error {
	return l.out.Append(Entry{Time: l.now(), Box: l.box, Kind: KindSessionStart, Session: id})
}

// EndSession appends a session-end marker.
func (l *DecisionLog) EndSession(id string) error {
	return l.out.Append(Entry{Time: l.now(), Box: l.box, Kind: KindSessionEnd, Session: id})
}

// DefaultLogMaxBytes is the size at which the egress log rotates to ".1".
const DefaultLogMaxBytes = 16 << 20

// Retention is how long an allowed decision survives rotation of the
// egress log however many denials follow it (it moves to the ".kept" file).
const Retention = 14 * 24 * time.Hour

// KeepAllowed is the jsonl keep rule of the egress log: allowed decisions,
// session markers and box requests younger than [Retention].
func KeepAllowed(line []byte, now time.Time) bool {
	var e struct {
		Time    time.Time `json:"time"`
		Kind    Kind      `json:"kind"`
		Allowed bool      `json:"allowed"`
	}
	if json.Unmarshal(line, &e) != nil {
		return false
	}
	important := e.Allowed || e.Kind == KindSessionStart || e.Kind == KindSessionEnd || e.Kind == KindRequest
	return important && now.Sub(e.Time) < Retention
}

// DecisionSchema names every line of a box's egress log: decisions,
// session marks, credential uses and the box's requests (docs/JSON.md).
const DecisionSchema = "corral.egress-decision/v1"

// OpenLog opens (creating with mode 0600) the egress decision log of box at
// path with the shared JSONL writer (one write per line, rotation to ".1" at
// [DefaultLogMaxBytes], allowed decisions kept for [Retention]). Denials are
// aggregated (see [DecisionLog]). Close the returned log when done.
func OpenLog(path, box string, logger *slog.Logger) (*DecisionLog, error) {
	return OpenLogSize(path, box, DefaultLogMaxBytes, logger)
}

// OpenLogSize is [OpenLog] with another rotation size (tests).
func OpenLogSize(path, box string, maxBytes int64, logger *slog.Logger) (*DecisionLog, error) {
	w, err := jsonl.Open(path, jsonl.Options{MaxBytes: maxBytes, Mode: 0o600, Keep: KeepAllowed, Schema: DecisionSchema})
	if err != nil {
		return nil, fmt.Errorf("opening egress log: %w", err)
	}
	l := NewDecisionLog(box, w, logger)
	l.closer = w
	l.startFlusher()
	return l, nil
}

// Close writes pending denial counts and closes the underlying writer if
// the log was opened by [OpenLog].
func (l *DecisionLog) Close() error {
	if l.stop != nil {
		close(l.stop)
		<-l.done
		l.stop = nil
	} else {
		l.Flush(true)
	}
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}
