package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/corral-dev/corral/core/jsonl"
)

// Forwarder sends audit events to a collector on this host: a syslog
// daemon (RFC 5424 over UDP, or over TCP with octet counting, RFC 6587)
// or an HTTP endpoint (one POST of one JSON event). The destination comes
// from the organisation's managed policy ([audit] forward, parsed and held
// to loopback by core/config); `corral audit --follow --forward` runs one.
type Forwarder struct {
	// Scheme is "syslog+udp", "syslog+tcp" or "http"; Addr host:port; URL
	// the whole URL (http).
	Scheme, Addr, URL string
	// OCSF: send OCSF events (else corral.audit-event/v1 lines).
	OCSF bool
	// Host and Version name this machine and corral in every event.
	Host, Version string
	// Timeout bounds each send; zero means 5s.
	Timeout time.Duration

	conn net.Conn
}

// Send forwards one event. A stream connection is opened on first use and
// again after a failure.
func (f *Forwarder) Send(ctx context.Context, ev Event) error {
	body, err := f.encode(ev)
	if err != nil {
		return err
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch f.Scheme {
	case "http":
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.URL, bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("forwarding an audit event to %s: %w", f.URL, err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := collectorClient.Do(req)
		if err != nil {
			return fmt.Errorf("forwarding an audit event to %s: %w", f.URL, err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("forwarding an audit event to %s: %s", f.URL, resp.Status)
		}
		return nil
	case "syslog+udp", "syslog+tcp":
		msg := f.syslog(ev, body)
		network := strings.TrimPrefix(f.Scheme, "syslog+")
		if f.conn == nil {
			var d net.Dialer
			c, err := d.DialContext(ctx, network, f.Addr)
			if err != nil {
				return fmt.Errorf("forwarding an audit event to %s://%s: %w", network, f.Addr, err)
			}
			f.conn = c
		}
		if network == "tcp" {
			msg = append([]byte(fmt.Sprintf("%d ", len(msg))), msg...) // RFC 6587 octet counting
		}
		dl, _ := ctx.Deadline()
		_ = f.conn.SetWriteDeadline(dl)
		if _, err := f.conn.Write(msg); err != nil {
			f.conn.Close()
			f.conn = nil
			return fmt.Errorf("forwarding an audit event to %s://%s: %w", network, f.Addr, err)
		}
		return nil
	}
	return fmt.Errorf("forwarding audit events: unknown scheme %q", f.Scheme)
}

// collectorClient talks to the collector directly: it is on loopback,
// and no proxy of the environment may see the events.
var collectorClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// Close closes a stream connection.
func (f *Forwarder) Close() error {
	if f.conn != nil {
		err := f.conn.Close()
		f.conn = nil
		return err
	}
	return nil
}

func (f *Forwarder) encode(ev Event) ([]byte, error) {
	var v any = ev
	if f.OCSF {
		v = OCSF(ev, f.Host, f.Version)
	} else {
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		return append([]byte(`{"schema":"`+Schema+`",`), b[1:]...), nil
	}
	return json.Marshal(v)
}

// syslog frames body as one RFC 5424 message: facility 13 (log audit),
// severity 6 (informational) or 4 (warning) for a refusal or a denial;
// APP-NAME corral, MSGID the event's kind. The message is the JSON event
// (ASCII-safe: encoding/json escapes what it must, and no newline).
func (f *Forwarder) syslog(ev Event, body []byte) []byte {
	sev := 6
	if c, ok := ocsfClasses[ev.Kind]; ok && c.Failure {
		sev = 4
	}
	host := f.Host
	if host == "" {
		host = "-"
	}
	msgid := sdName(string(ev.Kind))
	return fmt.Appendf(nil, "<%d>1 %s %s corral - %s - %s", 13*8+sev,
		ev.Time.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), sdName(host), msgid, body)
}

// sdName keeps a syslog header field to printable US-ASCII without space,
// at most 32 bytes (RFC 5424 MSGID; HOSTNAME allows 255, 32 is plenty).
func sdName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r > 32 && r < 127 && b.Len() < 32 {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

// Follow calls fn for every event of the log at path at or after
// f.Since (the rotated generation first, then the live file), and then
// for every event appended, until ctx ends.
func Follow(ctx context.Context, path string, f Filter, poll time.Duration, fn func(Event) error) error {
	match := func(line []byte) error {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil || ev.Kind == "" {
			return nil
		}
		if !f.Since.IsZero() && ev.Time.Before(f.Since) || f.Box != "" && ev.Box != f.Box {
			return nil
		}
		return fn(ev)
	}
	if err := older(path, match); err != nil {
		return err
	}
	return jsonl.Tail(ctx, path, 0, poll, match)
}
