// Package notify posts "host denied" desktop notifications with Allow
// actions and reports which action the user picked, and informational
// notifications (KindInfo) with no actions.
//
// Linux uses org.freedesktop.Notifications over D-Bus (freedesktop.go);
// macOS uses UNUserNotificationCenter (un_darwin.go), which only works from a
// signed Corral.app bundle. Cooldown keeps a retry loop inside a box from
// posting the same notification over and over.
package notify

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Action keys, the same on every platform.
const (
	ActionAllow     = "allow"      // label "Allow": allow the host permanently
	ActionAllowOnce = "allow-once" // label "Allow once"
)

// Kind says what a notification offers the user.
type Kind int

const (
	// KindDenied is "box wants to reach host", with Allow and Allow once.
	KindDenied Kind = iota
	// KindInfo only informs (e.g. the git guard reverted a change): no
	// actions, so nothing the user clicks can allow anything.
	KindInfo
)

// Notification is one message: by default a "box wants to reach host"
// one; Kind KindInfo has no actions and Host may be empty.
type Notification struct {
	Kind  Kind
	Box   string
	Host  string
	Title string
	Body  string
}

// actions is the freedesktop action list (key, label, …) for k.
func (k Kind) actions() []string {
	if k == KindInfo {
		return []string{}
	}
	return []string{ActionAllow, "Allow", ActionAllowOnce, "Allow once"}
}

// ActionEvent is the user's choice on a notification.
type ActionEvent struct {
	Box    string
	Host   string
	Action string // ActionAllow or ActionAllowOnce
}

// Notifier posts notifications and reports chosen actions. Actions returns
// the same channel on every call; it is closed by Close.
type Notifier interface {
	Notify(ctx context.Context, n Notification) error
	Actions() <-chan ActionEvent
	Close() error
}

// Nop is a Notifier that shows nothing. The app uses it when no
// notification service is available, so the menu still works.
type Nop struct{ ch chan ActionEvent }

var _ Notifier = (*Nop)(nil)

// NewNop returns a Notifier that drops every notification.
func NewNop() *Nop { return &Nop{ch: make(chan ActionEvent)} }

func (n *Nop) Notify(context.Context, Notification) error { return nil }
func (n *Nop) Actions() <-chan ActionEvent                { return n.ch }
func (n *Nop) Close() error                               { return nil }

// Cooldown says whether a (box, host) notification may be posted now: at
// most one per Period per pair. The zero Now means time.Now. It is safe for
// concurrent use.
type Cooldown struct {
	Period time.Duration
	Now    func() time.Time

	mu   sync.Mutex
	last map[[2]string]time.Time
}

// Allow reports whether a notification for (box, host) may be posted now
// and, if so, records it.
func (c *Cooldown) Allow(box, host string) bool {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	t := now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[[2]string]time.Time{}
	}
	k := [2]string{box, host}
	if last, ok := c.last[k]; ok && t.Sub(last) < c.Period {
		return false
	}
	c.last[k] = t
	// Forget old entries so a long-running app does not grow without bound.
	if len(c.last) > 1024 {
		for k2, t2 := range c.last {
			if t.Sub(t2) >= c.Period {
				delete(c.last, k2)
			}
		}
	}
	return true
}

// Reset forgets (box, host), e.g. after the host was allowed.
func (c *Cooldown) Reset(box, host string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.last, [2]string{box, host})
}

// Troubled is implemented by a Notifier that can learn after New that it
// will not be shown (macOS answers the authorization request later). The
// channel carries at most one line, for the menu's error line; the app
// shows it once.
type Troubled interface {
	Trouble() <-chan string
}

// UNErrorDomain code 1 (UNErrorCodeNotificationsNotAllowed): the
// notification daemon refused the app. An ad-hoc signed app is commonly
// refused, and is then not even listed in System Settings › Notifications.
const unErrorNotAllowed = 1

// AuthorizationProblem is the menu line for the answer to macOS's
// notification authorization request, or "" when notifications will be
// shown. domain, code and desc describe the NSError (desc is its
// localizedDescription); domain is "" when there was none.
func AuthorizationProblem(granted bool, domain string, code int, desc string) string {
	switch {
	case granted:
		return ""
	case domain == "UNErrorDomain" && code == unErrorNotAllowed:
		return "notifications refused by macOS (" + desc + "): Corral must be signed with an Apple Development or Developer ID certificate; denied hosts show in this menu"
	case domain != "":
		return "notifications unavailable (" + domain + " " + fmt.Sprint(code) + ": " + desc + "); denied hosts show in this menu"
	}
	return "notifications are off for Corral: turn them on in System Settings › Notifications › Corral; denied hosts show in this menu"
}

// infoSeq numbers informational notifications: each is its own event, so
// none replaces another.
var infoSeq atomic.Uint64

// id is the UN request identifier: one denial notification per (box,
// host), a later one replaces it; every informational one is new.
func (n Notification) id() string {
	if n.Kind == KindInfo {
		return fmt.Sprintf("corral-info-%d", infoSeq.Add(1))
	}
	return "corral-denied-" + n.Box + "-" + n.Host
}
