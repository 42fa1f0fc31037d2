package egress

import "time"

// credentialEntry is a credential line of the egress log: kind
// "credential", the credential's name, the upstream host, the HTTP status
// the box got (the broker's own 4xx/5xx when it refused or could not reach
// the upstream), the response bytes relayed to the
// box, and an error text when the request failed. Never the value.
type credentialEntry struct {
	Time   time.Time `json:"time"`
	Box    string    `json:"box"`
	Kind   Kind      `json:"kind"`
	Name   string    `json:"name"`
	Host   string    `json:"host"`
	Method string    `json:"method"`
	Status int       `json:"status"`
	Bytes  int64     `json:"bytes"`
	Error  string    `json:"error,omitempty"`
}

var _ CredentialLogger = (*DecisionLog)(nil)

// LogCredential appends one credential line.
func (l *DecisionLog) LogCredential(ev CredentialEvent) {
	e := credentialEntry{Time: ev.Time, Box: l.box, Kind: KindCredential, Name: ev.Name, Host: ev.Upstream,
		Method: truncate(ev.Method, 16), Status: ev.Status, Bytes: ev.Bytes, Error: truncate(ev.Err, 512)}
	if e.Time.IsZero() {
		e.Time = l.now()
	}
	if err := l.out.Append(e); err != nil {
		l.logger.Warn("writing egress credential log", "err", err)
	}
}
