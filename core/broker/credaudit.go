package broker

import (
	"log/slog"
	"sync"
	"time"

	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/egress"
)

// credFlushInterval is how often a broker writes its credential counts to
// the audit log; the last counts are written when it stops.
const credFlushInterval = time.Minute

// maxCredKeys bounds the distinct lines counted between two flushes;
// past it requests are counted under one overflow line.
const maxCredKeys = 512

// credAudit is the evidence of credential use: every brokered request is
// counted per credential, session, upstream, method and path class, and
// every refused one per reason, and the counts go to the audit log at
// every flush. The audit log keeps them through rotation (audit.Keep),
// and a flood of requests adds counts, not lines, so no flood can push
// the one real use out. Used requests, and requests refused by a
// credential's rules, also go on to the egress log line by line (next);
// other refusals only here.
type credAudit struct {
	next   egress.CredentialLogger
	record func(audit.Event) error
	box    string
	// host is the remote host a laptop's relay serves ("" for a box's
	// broker): every line names it.
	host   string
	logger *slog.Logger
	now    func() time.Time

	mu     sync.Mutex
	counts map[credKey]*credCount
	order  []credKey // first-seen order, so lines are written in a stable order

	stop chan struct{}
	done chan struct{}
}

type credKey struct {
	refused  egress.CredentialRefusal
	name     string
	session  string
	upstream string
	method   string
	class    string
}

type credCount struct {
	n, failed   int
	first, last time.Time
	status      int
}

// overflowKey counts what no longer fits.
var overflowKey = credKey{refused: "overflow"}

var _ egress.CredentialLogger = (*credAudit)(nil)

func newCredAudit(next egress.CredentialLogger, record func(audit.Event) error, boxName string, logger *slog.Logger) *credAudit {
	return &credAudit{next: next, record: record, box: boxName, logger: logger, now: time.Now, counts: map[credKey]*credCount{}}
}

// LogCredential counts ev and passes a used one on.
func (a *credAudit) LogCredential(ev egress.CredentialEvent) {
	// A request outside a credential's rules is a use the user narrowed
	// on purpose: it goes on to the egress log line by line, like a use.
	used := ev.Refusal == "" || ev.Refusal == egress.RefusedRule
	if used && a.next != nil {
		a.next.LogCredential(ev)
	}
	k := credKey{refused: ev.Refusal, name: ev.Name, session: ev.Session}
	if used {
		k.upstream, k.method, k.class = ev.Upstream, ev.Method, ev.Class
	}
	t := ev.Time
	if t.IsZero() {
		t = a.now()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.counts[k]
	if c == nil {
		if len(a.counts) >= maxCredKeys {
			k = overflowKey
			c = a.counts[k]
		}
		if c == nil {
			c = &credCount{first: t}
			a.counts[k] = c
			a.order = append(a.order, k)
		}
	}
	c.n++
	c.last, c.status = t, ev.Status
	if ev.Status >= 400 {
		c.failed++
	}
}

// Flush writes the counts since the last flush, one audit event each.
func (a *credAudit) Flush() {
	a.mu.Lock()
	counts, order := a.counts, a.order
	a.counts, a.order = map[credKey]*credCount{}, nil
	a.mu.Unlock()
	for _, k := range order {
		c := counts[k]
		f := map[string]any{audit.FieldCount: c.n, audit.FieldFirst: c.first.UTC(), audit.FieldLast: c.last.UTC(),
			audit.FieldStatus: c.status, audit.FieldFailed: c.failed}
		kind := audit.KindCredentialUse
		if k.refused != "" {
			kind = audit.KindCredentialRefused
			f[audit.FieldReason] = string(k.refused)
		} else {
			f[audit.FieldUpstream], f[audit.FieldMethod], f[audit.FieldClass] = k.upstream, k.method, k.class
		}
		if k.name != "" {
			f[audit.FieldCredential] = k.name
		}
		if k.session != "" {
			f[audit.FieldSession] = k.session
		}
		if a.host != "" {
			f[audit.FieldHost] = a.host
		}
		if err := a.record(audit.Event{Time: c.last, Kind: kind, Box: a.box, Fields: f}); err != nil {
			a.logger.Warn("recording credential use in the audit log", "box", a.box, "err", err)
		}
	}
}

// start flushes every interval until Close.
func (a *credAudit) start(interval time.Duration) {
	a.stop, a.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(a.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				a.Flush()
			case <-a.stop:
				return
			}
		}
	}()
}

// Close stops the flusher and writes what is left: at broker exit.
func (a *credAudit) Close() {
	if a.stop != nil {
		close(a.stop)
		<-a.done
		a.stop = nil
	}
	a.Flush()
}
