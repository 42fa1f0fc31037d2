package audit

import (
	"sort"
	"time"
)

// CredentialUse sums the credential events of one box for one credential:
// what `corral egress` and the menu show.
type CredentialUse struct {
	Credential string    `json:"credential"`
	Uses       int       `json:"uses"`
	Failed     int       `json:"failed"` // uses that got a 4xx or 5xx
	LastUse    time.Time `json:"last_use"`
	Sessions   int       `json:"sessions"`
	// Refused counts refused requests that named this credential with a
	// valid token (an unknown credential, a dirty path).
	Refused int `json:"refused"`
}

// CredentialUses sums credential-use and credential-refused events by
// credential, sorted by name, and counts the refusals that named none
// (no token, a wrong token, a foreign Host, a connection from outside the
// funnel): those say nothing about which credential was tried.
func CredentialUses(evs []Event) (uses []CredentialUse, refused int) {
	by := map[string]*CredentialUse{}
	sessions := map[string]map[string]bool{}
	for _, e := range evs {
		if e.Kind != KindCredentialUse && e.Kind != KindCredentialRefused {
			continue
		}
		name, _ := e.Fields[FieldCredential].(string)
		n := intField(e.Fields[FieldCount])
		if e.Kind == KindCredentialRefused && name == "" {
			refused += n
			continue
		}
		u := by[name]
		if u == nil {
			u = &CredentialUse{Credential: name}
			by[name] = u
			sessions[name] = map[string]bool{}
		}
		if e.Kind == KindCredentialRefused {
			u.Refused += n
			continue
		}
		u.Uses += n
		u.Failed += intField(e.Fields[FieldFailed])
		if s, _ := e.Fields[FieldSession].(string); s != "" {
			sessions[name][s] = true
		}
		last := e.Time
		if s, ok := e.Fields[FieldLast].(string); ok {
			if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
				last = t
			}
		} else if t, ok := e.Fields[FieldLast].(time.Time); ok {
			last = t
		}
		if last.After(u.LastUse) {
			u.LastUse = last
		}
	}
	for n, u := range by {
		u.Sessions = len(sessions[n])
		uses = append(uses, *u)
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].Credential < uses[j].Credential })
	return uses, refused
}

// intField reads a count from Fields: float64 when read back from the log,
// int when built in memory.
func intField(v any) int {
	switch n := v.(type) {
	case float64:
		if n > 0 && n < 1<<53 {
			return int(n)
		}
	case int:
		return max(n, 0)
	}
	return 0
}
