package egress

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

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
}

// IsDecision reports whether e is a connect or http decision line.
func (e Entry) IsDecision() bool { return e.Kind == KindConnect || e.Kind == KindHTTP }

// MarshalJSON writes decision lines with their fixed fields and session
// markers with only theirs.
func (e Entry) MarshalJSON() ([]byte, error) {
	if e.IsDecision() {
		type plain Entry // no methods: no recursion
		p := plain(e)
		p.Session = ""
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
type DecisionLog struct {
	box    string
	out    Appender
	logger *slog.Logger
	now    func() time.Time
	closer io.Closer
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
	return &DecisionLog{box: box, out: out, logger: logger, now: time.Now}
}

// LogDecision appends one decision line.
func (l *DecisionLog) LogDecision(d Decision) {
	e := Entry{Time: d.Time, Box: l.box, Kind: d.Kind, Host: d.Host, Port: d.Port,
		Allowed: d.Allowed, Reason: d.Reason}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	if d.IP.IsValid() {
		e.IP = d.IP.String()
	}
	var v any = e
	if plainJSON(e.Host) && plainJSON(e.Box) {
		// Pre-encoded: the deny path is hot and reflection is not free.
		v = json.RawMessage(appendDecisionJSON(make([]byte, 0, 192), e))
	}
	if err := l.out.Append(v); err != nil {
		l.logger.Warn("writing egress decision log", "err", err)
	}
}

// plainJSON reports whether s needs no escaping in a JSON string.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
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
	return append(b, `"}`...)
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

// OpenLog opens (creating with mode 0600) the egress decision log of box at
// path with the shared JSONL writer (one write per line, rotation to ".1" at
// [DefaultLogMaxBytes]). Close the returned log when done.
func OpenLog(path, box string, logger *slog.Logger) (*DecisionLog, error) {
	w, err := jsonl.Open(path, jsonl.Options{MaxBytes: DefaultLogMaxBytes, Mode: 0o600})
	if err != nil {
		return nil, fmt.Errorf("opening egress log: %w", err)
	}
	l := NewDecisionLog(box, w, logger)
	l.closer = w
	return l, nil
}

// Close closes the underlying writer if the log was opened by [OpenLog].
func (l *DecisionLog) Close() error {
	if l.closer == nil {
		return nil
	}
	return l.closer.Close()
}
