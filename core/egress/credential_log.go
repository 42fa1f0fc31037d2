package egress

import "time"

// credentialEntry is a credential line of the egress log: kind
// "credential", the credential's name, the upstream host, the HTTP status
// the box got (the broker's own 4xx/5xx when it refused or could not reach
// the upstream), the response bytes relayed to the
// box, and an error text when the request failed. Never the value, the
// token, the path or the query: the session and the path class instead.
type credentialEntry struct {
	Time    time.Time         `json:"time"`
	Box     string            `json:"box"`
	Kind    Kind              `json:"kind"`
	Name    string            `json:"name"`
	Session string            `json:"session,omitempty"`
	Host    string            `json:"host"`
	Method  string            `json:"method"`
	Class   string            `json:"class,omitempty"`
	Status  int               `json:"status"`
	Bytes   int64             `json:"bytes"`
	Error   string            `json:"error,omitempty"`
	Refusal CredentialRefusal `json:"refusal,omitempty"`
}

var _ CredentialLogger = (*DecisionLog)(nil)

// LogCredential appends one credential line.
func (l *DecisionLog) LogCredential(ev CredentialEvent) {
	e := credentialEntry{Time: ev.Time, Box: l.box, Kind: KindCredential, Name: ev.Name, Session: truncate(ev.Session, 64),
		Host: ev.Upstream, Method: truncate(ev.Method, 16), Class: truncate(ev.Class, 64), Status: ev.Status,
		Bytes: ev.Bytes, Error: truncate(ev.Err, 512), Refusal: ev.Refusal}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	if err := l.out.Append(e); err != nil {
		l.logger.Warn("writing egress credential log", "err", err)
	}
}
