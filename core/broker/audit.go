package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/egress"
)

// auditWindow is how often a broker records a denial of the same host in
// the audit log; the egress log has every one.
const auditWindow = 10 * time.Minute

// maxAuditHosts bounds the hosts remembered for auditWindow, so that a box
// trying endless distinct names cannot grow the broker's memory or flood
// the audit log without bound: when full, further denials are not audited
// until entries age out.
const maxAuditHosts = 4096

// denialAudit passes decisions on and records denials in the audit log, at
// most once per host per auditWindow.
type denialAudit struct {
	next   egress.DecisionLogger
	record func(audit.Event) error
	box    string
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	last map[string]time.Time
}

var _ egress.DecisionLogger = (*denialAudit)(nil)

func newDenialAudit(next egress.DecisionLogger, record func(audit.Event) error, boxName string, logger *slog.Logger) *denialAudit {
	return &denialAudit{next: next, record: record, box: boxName, logger: logger, now: time.Now, last: map[string]time.Time{}}
}

// LogDecision logs d and audits it if it is a denial not recorded lately,
// or the denial that ends a hold: that one is always recorded, with
// "held_ms", so that the audit tells a request the user let time out (or
// denied) from one refused at once. Holds are bounded (Config.MaxHeld at a
// time, each for Config.Hold), and so are these events.
func (a *denialAudit) LogDecision(d egress.Decision) {
	a.next.LogDecision(d)
	if d.Allowed {
		return
	}
	fields := map[string]any{"host": d.Host, "port": d.Port, "reason": string(d.Reason)}
	if d.Held > 0 {
		fields["held_ms"] = max(d.Held.Milliseconds(), 1)
	} else if !a.due(d.Host) {
		return
	}
	err := a.record(audit.Event{Kind: audit.KindEgressDenied, Box: a.box, Fields: fields})
	if err != nil {
		a.logger.Warn("recording an egress denial in the audit log", "box", a.box, "host", d.Host, "err", err)
	}
}

func (a *denialAudit) due(host string) bool {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.last[host]; ok && now.Sub(t) < auditWindow {
		return false
	}
	if len(a.last) >= maxAuditHosts {
		for h, t := range a.last {
			if now.Sub(t) >= auditWindow {
				delete(a.last, h)
			}
		}
		if len(a.last) >= maxAuditHosts {
			return false
		}
	}
	a.last[host] = now
	return true
}
