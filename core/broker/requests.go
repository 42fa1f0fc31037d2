package broker

import (
	"time"

	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/egress"
)

// newInbox is the box's request channel (egress.RequestPath): requests
// are recorded in the box's egress log, where `corral egress`, the menu
// and the app's notifications find them. A request grants nothing; the
// user's answer is an approval or a denial in the approvals file, which
// the broker already follows.
func newInbox(log *egress.DecisionLog, hold time.Duration) *egress.RequestInbox {
	return egress.NewRequestInbox(egress.RequestConfig{Record: log.LogRequest, Hold: hold})
}

// settleDenied ends the wait of every pending request the user denied
// since it was filed: the connections held for it are refused. It runs
// after each reload of the approvals file (an approval needs nothing: the
// new policy lets its held connections through).
func (b *boxPolicy) settleDenied(in *egress.RequestInbox) {
	denials, err := b.store.Denials()
	if err != nil {
		b.logger.Error("reading the denied requests", "box", b.box, "err", err)
		return
	}
	if len(denials) == 0 {
		return
	}
	in.Settle(func(r egress.BoxRequest) bool { return approval.DeniedSince(denials, r.Key(), r.Time) })
}
