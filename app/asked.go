package app

import (
	"context"
	"fmt"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/app/notify"
	"github.com/corral-dev/corral/core/approval"
	"github.com/corral-dev/corral/core/audit"
	"github.com/corral-dev/corral/core/display"
	"github.com/corral-dev/corral/core/egress"
)

// BoxRequest is a request a program in a box filed (corral-request).
type BoxRequest = menu.BoxRequest

// boxRequest is a request line of an egress log as the menu shows it.
func boxRequest(e egress.Entry) BoxRequest {
	r := BoxRequest{Request: e.Request, IsPort: e.What == egress.RequestPort, Why: e.Why, Time: e.Time}
	if e.Who != nil {
		r.Who = e.Who.String()
	}
	return r
}

// askedRequests are the box's requests that wait for an answer: the
// request lines of entries (the box's egress log) that no approval,
// denial or allowed connection answered since (core/approval Pending).
func (b *coreBackend) askedRequests(name string, entries []egress.Entry) []BoxRequest {
	s, err := approval.Open(b.svc.Layout, name)
	if err != nil {
		return nil
	}
	p, _ := s.Pending(entries, time.Now()) // an unreadable approvals file: none shown (corral egress says why)
	out := make([]BoxRequest, 0, len(p))
	for _, e := range p {
		out = append(out, boxRequest(e))
	}
	return out
}

// Deny answers no to a request of the box, as `corral deny` does; a
// connection the broker held for it is refused.
func (b *coreBackend) Deny(ctx context.Context, name, request string) error {
	_, err := approval.Deny(b.svc.Layout, name, request, audit.ActorApp)
	return err
}

func (l *loop) deny(ctx context.Context, box, request string) {
	l.goDo(ctx, func(ctx context.Context) func() {
		err := l.b.Deny(ctx, box, request)
		return func() {
			if err != nil {
				l.fail(fmt.Sprintf("deny %s for %s", request, box), err)
			} else {
				l.log.Info("denied a box request", "box", box, "request", request)
				l.forgetAsked(box, request)
			}
			l.render()
			l.refresh(ctx)
		}
	})
}

// forgetAsked drops an answered request from the shown inbox until the
// next snapshot says otherwise.
func (l *loop) forgetAsked(box, request string) {
	for i := range l.state.Boxes {
		b := &l.state.Boxes[i]
		if b.Name != box {
			continue
		}
		kept := b.Asked[:0:0]
		for _, r := range b.Asked {
			if r.Request != request {
				kept = append(kept, r)
			}
		}
		b.Asked = kept
	}
}

// asked records a request the box filed: merge it into the inbox, redraw
// and notify with its reason and process (rate-limited per box and
// request). Every shown string is the box's and goes through core/display.
func (l *loop) asked(ctx context.Context, box string, r BoxRequest) {
	for i := range l.state.Boxes {
		b := &l.state.Boxes[i]
		if b.Name != box {
			continue
		}
		kept := append([]BoxRequest(nil), b.Asked...)
		found := false
		for j := range kept {
			if kept[j].Request == r.Request {
				kept[j], found = r, true
			}
		}
		if !found {
			kept = append(kept, r)
		}
		b.Asked = kept
	}
	l.render()
	if l.cool.Allow(box, "request "+r.Request) {
		l.goDo(ctx, func(ctx context.Context) func() {
			if err := l.opts.Notifier.Notify(ctx, requestNotification(box, r)); err != nil {
				l.log.Warn("posting notification", "err", err)
			}
			return nil
		})
	}
	l.refresh(ctx)
}

// requestNotification is the notification of a box's request: "node (pid
// 42, npm < bash, session tests) in web-3f2a1c asks for
// registry.example.test: “npm install needs the registry”". A host gets
// Allow and Allow once; a port only says how to forward it.
func requestNotification(box string, r BoxRequest) notify.Notification {
	who := "A program"
	if r.Who != "" {
		who = display.Text(r.Who, 80)
	}
	why := "“" + display.Text(r.Why, 0) + "”"
	if !r.IsPort && !menu.RequestAllowable(r) {
		// Not one canonical host: nothing to allow, so no Allow action.
		return notify.Notification{Kind: notify.KindInfo, Box: box,
			Title: fmt.Sprintf("%s filed a request that cannot be allowed", display.Text(box, 0)),
			Body:  fmt.Sprintf("%s in %s asked for %s: %s.", who, display.Text(box, 0), display.Text(r.Request, 0), why)}
	}
	if r.IsPort {
		return notify.Notification{Kind: notify.KindInfo, Box: box,
			Title: fmt.Sprintf("%s asks to forward %s", display.Text(box, 0), display.Text(r.Request, 0)),
			Body: fmt.Sprintf("%s in %s asks to forward %s: %s. corral port %s forwards it.", who, display.Text(box, 0),
				display.Text(r.Request, 0), why, display.Text(box, 0))}
	}
	target := egress.ShowTarget(r.Request, 0)
	local := ""
	if egress.ThisMachine(egress.EntryHost(r.Request)) {
		local = " " + egress.ThisMachineNotice
	}
	return notify.Notification{Box: box, Host: r.Request,
		Title: fmt.Sprintf("%s asks to reach %s", display.Text(box, 0), target),
		Body:  fmt.Sprintf("%s in %s asks for %s: %s. The reason is the box's own.%s Allow it?", who, display.Text(box, 0), target, why, local)}
}

// whoText is what a decision's client said about itself, for the menu and
// notifications ("session ab12cd"): the box's word, shown through
// core/display by the caller.
func whoText(w egress.Attribution) string {
	if w.Exe == "" && w.PID == 0 && w.Chain == "" {
		if w.Session == "" {
			return ""
		}
		return "session " + w.Session
	}
	return w.String()
}
