package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corral-dev/corral/app/menu"
	"github.com/corral-dev/corral/core/egress"
)

// remoteOpenAge: opening the menu reads a healthy host again only when its
// last read started at least this long ago (readSchedule).
const remoteOpenAge = 10 * time.Second

// menuOpened tells the loop the menu opened, without waiting: one
// pending opening is as good as many.
func (l *loop) menuOpened() {
	select {
	case l.opened <- struct{}{}:
	default:
	}
}

// refreshRemote lists the hosts off the loop, then starts a read of each
// host that no read is under way for and that its schedule says is due
// (readSchedule: by the timer, or opened when the menu opened), each on
// its own goroutine. Nothing here waits: a slow or unreachable host holds
// only its own read.
func (l *loop) refreshRemote(ctx context.Context, opened bool) {
	if l.opts.Remote == nil || l.listingHosts {
		return
	}
	l.listingHosts = true
	l.goDo(ctx, func(ctx context.Context) func() {
		hosts, err := l.opts.Remote.RemoteHosts(ctx)
		return func() {
			l.listingHosts = false
			if err != nil {
				if l.remoteErr == "" {
					l.log.Warn("reading the remote hosts", "err", err)
				}
				l.remoteErr = err.Error()
				l.render()
				return
			}
			l.remoteErr = ""
			l.setHosts(hosts)
			now := time.Now()
			for _, h := range l.remote {
				if l.remoteSched.due(l.remoteReads[h.Name], now, opened) {
					l.readHost(ctx, h.Name)
				}
			}
			l.render()
		}
	})
}

// setHosts makes the shown hosts those listed: a host still listed keeps
// its last read (its URL as listed now), a new one is shown as reading,
// a removed one goes.
func (l *loop) setHosts(listed []menu.RemoteHost) {
	out := make([]menu.RemoteHost, 0, len(listed))
	for _, h := range listed {
		i := slices.IndexFunc(l.remote, func(x menu.RemoteHost) bool { return x.Name == h.Name })
		switch {
		case i >= 0 && l.remote[i].URL == h.URL:
			out = append(out, l.remote[i])
		default:
			out = append(out, menu.RemoteHost{Name: h.Name, URL: h.URL, Reading: true})
		}
	}
	l.remote = out
}

// readHost reads one host off the loop and puts the result in place when
// it comes (if the host is still listed). While a read of the host is
// under way, one more is noted and runs when it ends: that read may have
// started before what the caller changed.
func (l *loop) readHost(ctx context.Context, name string) {
	l.readHostAgain(ctx, name, false)
}

// readHostAgain is readHost; again reads once more after a read under way
// (after an action), rather than being content with it (a timer).
func (l *loop) readHostAgain(ctx context.Context, name string, again bool) {
	if l.remoteReading[name] {
		if again {
			l.remoteAgain[name] = true
		}
		return
	}
	l.remoteReading[name] = true
	l.remoteReads[name] = l.remoteSched.start(l.remoteReads[name], time.Now())
	l.goDo(ctx, func(ctx context.Context) func() {
		r := l.opts.Remote.ReadHost(ctx, name)
		end := time.Now()
		return func() {
			delete(l.remoteReading, name)
			l.remoteReads[name] = l.remoteSched.done(l.remoteReads[name], end, r.Err != "")
			if l.remoteAgain[name] {
				delete(l.remoteAgain, name)
				defer l.readHost(ctx, name)
			}
			i := slices.IndexFunc(l.remote, func(x menu.RemoteHost) bool { return x.Name == name })
			if i < 0 {
				return // removed meanwhile
			}
			if r.Err != "" && l.remote[i].Err == "" {
				l.log.Warn("reading a remote host", "host", name, "err", r.Err)
			}
			r.Name, r.URL, r.Reading = name, l.remote[i].URL, false
			l.remote[i] = r
			l.render()
		}
	})
}

// remoteClick handles a click on a remote box's item: the actions that
// run on its host (corral --host), and no other. Anything else is refused
// here, whatever the menu offered: no local action touches a remote box.
func (l *loop) remoteClick(ctx context.Context, a menu.Action) {
	r := l.opts.Remote
	switch {
	case r == nil:
		l.fail("remote box "+a.Box, fmt.Errorf("no remote hosts in this app"))
	case a.Kind == menu.ActStart:
		l.remoteOp(ctx, a.Remote, a.Box, "Starting", "start", r.RemoteStart)
		return
	case a.Kind == menu.ActStop:
		l.remoteOp(ctx, a.Remote, a.Box, "Stopping", "stop", r.RemoteStop)
		return
	case a.Kind == menu.ActAllow:
		l.remoteAllow(ctx, a)
		return
	case a.Kind == menu.ActOpenSession:
		l.openTerminal(ctx, a)
		return
	default:
		l.fail(fmt.Sprintf("box %s on %s", a.Box, a.Remote), fmt.Errorf("menu action %d does not run on a remote host", a.Kind))
	}
	l.render()
}

// remoteOp runs a start or stop on a remote box off the loop, with the box
// marked busy meanwhile, then reads its host again.
func (l *loop) remoteOp(ctx context.Context, host, box, verb, name string, f func(context.Context, string, string) error) {
	key := menu.BusyKey(host, box)
	if _, busy := l.ui.Busy[key]; busy {
		return
	}
	l.ui.Busy[key] = verb
	l.render()
	l.goDo(ctx, func(ctx context.Context) func() {
		err := f(ctx, host, box)
		return func() {
			delete(l.ui.Busy, key)
			if err != nil {
				l.fail(fmt.Sprintf("%s %s on %s", name, box, host), err)
			}
			l.render()
			l.readHostAgain(ctx, host, true)
		}
	})
}

// remoteAllow allows a host for a remote box off the loop; the denial
// leaves the menu at once, and the host is read again.
func (l *loop) remoteAllow(ctx context.Context, a menu.Action) {
	l.goDo(ctx, func(ctx context.Context) func() {
		err := l.opts.Remote.RemoteAllow(ctx, a.Remote, a.Box, a.Host, a.Scope)
		return func() {
			if err != nil {
				l.fail(fmt.Sprintf("allow %s for %s on %s", a.Host, a.Box, a.Remote), err)
			} else {
				l.log.Info("allowed host", "host", a.Remote, "box", a.Box, "entry", a.Host, "scope", a.Scope.String())
				l.forgetRemoteDenied(a)
			}
			l.render()
			l.readHostAgain(ctx, a.Remote, true)
		}
	})
}

// forgetRemoteDenied drops what an Allow covered from a remote box's shown
// denials until the host's next read says otherwise.
func (l *loop) forgetRemoteDenied(a menu.Action) {
	for i := range l.remote {
		if l.remote[i].Name != a.Remote {
			continue
		}
		for j := range l.remote[i].Boxes {
			b := &l.remote[i].Boxes[j]
			if b.Name != a.Box {
				continue
			}
			b.Denied = slices.DeleteFunc(slices.Clone(b.Denied), func(d menu.DeniedHost) bool {
				return d.Host == a.Host || egress.EntryFor(d.Host, d.Port) == a.Host || (a.Scope == menu.AllowDomain && strings.HasSuffix(d.Host, "."+a.Host))
			})
		}
	}
}
