package egress

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
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

// Appender appends one JSON value as one line. [*JSONLWriter] implements it,
// and so does the shared JSONL writer in core/jsonl.
type Appender interface {
	Append(v any) error
}

// DecisionLog turns decisions into log [Entry] lines for one box.
type DecisionLog struct {
	box    string
	out    Appender
	logger *slog.Logger
	now    func() time.Time
}

var _ DecisionLogger = (*DecisionLog)(nil)

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
	var err error
	if raw, ok := l.out.(rawAppender); ok && plainJSON(e.Host) && plainJSON(e.Box) {
		err = raw.AppendRaw(appendDecisionJSON(make([]byte, 0, 192), e))
	} else {
		err = l.out.Append(e)
	}
	if err != nil {
		l.logger.Warn("writing egress decision log", "err", err)
	}
}

// rawAppender is implemented by writers that take pre-encoded lines.
type rawAppender interface {
	AppendRaw(b []byte) error
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

// JSONLWriter appends JSON lines to a file: one write(2) per line on an
// O_APPEND descriptor, so lines from several writers and processes never
// interleave, rotating the file to path+".1" (one generation) when it would
// grow past maxBytes. Rotation takes an exclusive flock.
//
// It is the egress package's own writer; a shared core/jsonl writer with the
// same behaviour can be used instead through [Appender].
type JSONLWriter struct {
	path     string
	maxBytes int64
	mode     os.FileMode

	mu   sync.Mutex
	f    *os.File
	size int64
	buf  []byte
}

var _ Appender = (*JSONLWriter)(nil)

// OpenJSONL opens (creating with mode 0600) the log at path. maxBytes <= 0
// means [DefaultLogMaxBytes].
func OpenJSONL(path string, maxBytes int64) (*JSONLWriter, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultLogMaxBytes
	}
	w := &JSONLWriter{path: path, maxBytes: maxBytes, mode: 0o600}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *JSONLWriter) open() error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, w.mode)
	if err != nil {
		return fmt.Errorf("opening log %s: %w", w.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("opening log %s: %w", w.path, err)
	}
	w.f, w.size = f, st.Size()
	return nil
}

// Append marshals v and appends it as one line.
func (w *JSONLWriter) Append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding log line: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(b)
}

// AppendRaw appends b, which must be one JSON value without a newline, as a
// line. It is the fast path [DecisionLog] uses.
func (w *JSONLWriter) AppendRaw(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.appendLocked(b)
}

func (w *JSONLWriter) appendLocked(b []byte) error {
	if w.f == nil {
		return fmt.Errorf("appending to log %s: %w", w.path, os.ErrClosed)
	}
	w.buf = append(append(w.buf[:0], b...), '\n')
	if w.size+int64(len(w.buf)) > w.maxBytes {
		if err := w.rotate(); err != nil {
			return err
		}
	}
	// One write(2) on an O_APPEND descriptor: the kernel appends it whole,
	// so lines from several writers do not interleave.
	n, err := w.f.Write(w.buf)
	w.size += int64(n)
	if err != nil {
		return fmt.Errorf("appending to log %s: %w", w.path, err)
	}
	return nil
}

// rotate renames the file to ".1" and opens a new one, under an exclusive
// flock so that two processes do not both rotate. If another process rotated
// first (the path is no longer our inode) it only reopens.
func (w *JSONLWriter) rotate() error {
	if err := flock(w.f, true); err != nil {
		return fmt.Errorf("locking log %s: %w", w.path, err)
	}
	cur, err1 := w.f.Stat()
	onDisk, err2 := os.Stat(w.path)
	if err1 == nil && err2 == nil && os.SameFile(cur, onDisk) && onDisk.Size() > 0 {
		if err := os.Rename(w.path, w.path+".1"); err != nil {
			return fmt.Errorf("rotating log %s: %w", w.path, err)
		}
	}
	old := w.f
	if err := w.open(); err != nil {
		w.f = old
		flock(old, false) //nolint:errcheck
		return err
	}
	flock(old, false) //nolint:errcheck
	return old.Close()
}

// Close closes the file.
func (w *JSONLWriter) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}

func flock(f *os.File, lock bool) error {
	how := syscall.LOCK_UN
	if lock {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}
