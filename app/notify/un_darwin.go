package notify

// Linking UserNotifications is what registers its classes with the
// Objective-C runtime; without it objc.GetClass("UNUserNotificationCenter")
// is nil (darwinkit has no UserNotifications package, darwinkit#257).
//
// corral_current_center guards +currentNotificationCenter, which raises an
// Objective-C exception (not an error) when LaunchServices has no bundle
// proxy for the process, e.g. a Corral.app run from a path LaunchServices
// never registered; an exception crossing into Go aborts the process.

/*
#cgo CFLAGS: -x objective-c -fobjc-exceptions
#cgo LDFLAGS: -framework Foundation -framework UserNotifications
#import <Foundation/Foundation.h>
#import <UserNotifications/UserNotifications.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern void corralAuthDone(uintptr_t h, int granted, char *domain, long code, char *desc);

// corral_request_authorization asks for alerts and sounds; the answer
// goes to Go (corralAuthDone, export_darwin.go) with h. The completion
// handler is a block the compiler makes: AppKit keeps it after the call
// returns, and darwinkit v0.5.0's dispose helper for a block built from a
// Go func reads memory it has just freed.
static void corral_request_authorization(void *center, unsigned long options, uintptr_t h) {
	UNUserNotificationCenter *c = (UNUserNotificationCenter *)center;
	[c requestAuthorizationWithOptions:(UNAuthorizationOptions)options completionHandler:^(BOOL granted, NSError *err) {
		const char *domain = err ? err.domain.UTF8String : NULL;
		const char *desc = err ? err.localizedDescription.UTF8String : NULL;
		corralAuthDone(h, granted ? 1 : 0, (char *)domain, err ? (long)err.code : 0, (char *)desc);
	}];
}

static void *corral_current_center(char **reason) {
	@try {
		return (void *)[UNUserNotificationCenter currentNotificationCenter];
	} @catch (NSException *e) {
		const char *r = [[e reason] UTF8String];
		*reason = strdup(r ? r : "unknown exception");
		return NULL;
	}
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/cgo"
	"sync"
	"unsafe"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/objc"
)

const unCategory = "corral-denied"

// UN posts notifications through UNUserNotificationCenter. It only works
// in a process running from a Corral.app bundle whose code signature
// matches its bundle identifier; the bare CLI must not construct it
// (UNUserNotificationCenter raises without a bundle identifier).
type UN struct {
	log     *slog.Logger
	center  objc.Object
	actions chan ActionEvent
	trouble chan string // at most one line: the authorization answer
	once    sync.Once
}

var _ Troubled = (*UN)(nil)

var _ Notifier = (*UN)(nil)

// unDelegate keeps the delegate alive: UNUserNotificationCenter.delegate is
// a weak reference. unCurrent is the UN the delegate reports to.
var (
	unDelegate objc.Object
	unCurrent  *UN
	unMu       sync.Mutex
)

// New sets up UNUserNotificationCenter. Call it on the main thread before
// NSApp runs (app.Run does), so that a click which launches the app is
// delivered to the delegate.
func New(log *slog.Logger) (Notifier, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bundle := objc.Call[objc.Object](objc.GetClass("NSBundle"), objc.Sel("mainBundle"))
	if objc.Call[string](bundle, objc.Sel("bundleIdentifier")) == "" {
		return nil, errors.New("notifications need a bundle identifier: run Corral.app, not the bare corral binary")
	}
	cls := objc.GetClass("UNUserNotificationCenter")
	if cls.Ptr() == nil {
		return nil, errors.New("UserNotifications framework not loaded")
	}
	u := &UN{log: log, actions: make(chan ActionEvent, 16), trouble: make(chan string, 1)}
	var reason *C.char
	center := C.corral_current_center(&reason)
	if center == nil {
		msg := C.GoString(reason)
		C.free(unsafe.Pointer(reason))
		return nil, fmt.Errorf("notification center unavailable: %s (is Corral.app registered with LaunchServices? open it from /Applications)", msg)
	}
	u.center = objc.ObjectFrom(center)

	unMu.Lock()
	unCurrent = u
	if unDelegate.Ptr() == nil {
		unDelegate = newUNDelegate()
	}
	unMu.Unlock()
	// 1. delegate first, 2. categories, 3. authorization (macos-facts §2).
	objc.Call[objc.Void](u.center, objc.Sel("setDelegate:"), unDelegate)

	allow := objc.Call[objc.Object](objc.GetClass("UNNotificationAction"), objc.Sel("actionWithIdentifier:title:options:"),
		ActionAllow, "Allow", uint(0))
	once := objc.Call[objc.Object](objc.GetClass("UNNotificationAction"), objc.Sel("actionWithIdentifier:title:options:"),
		ActionAllowOnce, "Allow once", uint(0))
	category := objc.Call[objc.Object](objc.GetClass("UNNotificationCategory"),
		objc.Sel("categoryWithIdentifier:actions:intentIdentifiers:options:"),
		unCategory, []objc.IObject{allow, once}, []string{}, uint(0))
	objc.Call[objc.Void](u.center, objc.Sel("setNotificationCategories:"),
		objc.Call[objc.Object](objc.GetClass("NSSet"), objc.Sel("setWithArray:"), []objc.IObject{category}))

	const alertSound = 4 | 2 // UNAuthorizationOptionAlert | Sound
	auth := func(granted bool, domain string, code int, desc string) {
		if msg := AuthorizationProblem(granted, domain, code, desc); msg != "" {
			log.Warn("notifications not authorized", "granted", granted, "domain", domain, "code", code, "description", desc)
			select {
			case u.trouble <- msg:
			default:
			}
		}
	}
	C.corral_request_authorization(u.center.Ptr(), C.ulong(alertSound), C.uintptr_t(cgo.NewHandle(authAnswer(auth))))
	return u, nil
}

// authAnswer receives the authorization answer (authDone).
type authAnswer func(granted bool, domain string, code int, desc string)

// authDone hands the answer to the function h holds and deletes h: the
// handler runs once.
func authDone(h cgo.Handle, granted bool, domain string, code int, desc string) {
	f := h.Value().(authAnswer)
	h.Delete()
	f(granted, domain, code, desc)
}

// newUNDelegate registers CorralUNDelegate, an NSObject subclass with the
// two UNUserNotificationCenterDelegate methods, and returns an instance.
// It is built with AllocateClass/AddMethod rather than WrapAsProtocol,
// which needs the protocol object at run time.
func newUNDelegate() objc.Object {
	cls := objc.AllocateClass(objc.GetClass("NSObject"), "CorralUNDelegate", 0)
	objc.AddMethod(cls, objc.Sel("userNotificationCenter:didReceiveNotificationResponse:withCompletionHandler:"),
		func(self objc.Object, center objc.Object, resp objc.Object, done objc.Block) {
			action := objc.Call[string](resp, objc.Sel("actionIdentifier"))
			n := objc.Call[objc.Object](resp, objc.Sel("notification"))
			req := objc.Call[objc.Object](n, objc.Sel("request"))
			content := objc.Call[objc.Object](req, objc.Sel("content"))
			info := objc.Call[map[string]string](content, objc.Sel("userInfo"))
			unMu.Lock()
			u := unCurrent
			unMu.Unlock()
			if u != nil && (action == ActionAllow || action == ActionAllowOnce) {
				select {
				case u.actions <- ActionEvent{Box: info["box"], Host: info["host"], Action: action}:
				default:
					u.log.Warn("dropping notification action: nobody is reading", "action", action)
				}
			}
			objc.CallBlock[objc.Void](done) // always complete
		})
	// Show banners even while the app is frontmost.
	objc.AddMethod(cls, objc.Sel("userNotificationCenter:willPresentNotification:withCompletionHandler:"),
		func(self objc.Object, center objc.Object, n objc.Object, done objc.Block) {
			const bannerListSound = 16 | 8 | 2
			objc.CallBlock[objc.Void](done, uint(bannerListSound))
		})
	objc.RegisterClass(cls)
	return objc.Call[objc.Object](cls, objc.Sel("new"))
}

// Notify posts n in the "corral-denied" category (Allow, Allow once) with
// the box and host in userInfo, or, for KindInfo, in no category (no
// actions). The request goes through the main queue.
func (u *UN) Notify(ctx context.Context, n Notification) error {
	errc := make(chan error, 1)
	dispatch.MainQueue().DispatchAsync(func() {
		content := objc.Call[objc.Object](objc.GetClass("UNMutableNotificationContent"), objc.Sel("new"))
		objc.Call[objc.Void](content, objc.Sel("setTitle:"), n.Title)
		objc.Call[objc.Void](content, objc.Sel("setBody:"), n.Body)
		id := n.id()
		if n.Kind != KindInfo {
			objc.Call[objc.Void](content, objc.Sel("setCategoryIdentifier:"), unCategory)
			objc.Call[objc.Void](content, objc.Sel("setUserInfo:"), map[string]string{"box": n.Box, "host": n.Host})
		}
		req := objc.Call[objc.Object](objc.GetClass("UNNotificationRequest"), objc.Sel("requestWithIdentifier:content:trigger:"),
			id, content, objc.Object{})
		// A nil completion handler: darwinkit v0.5.0's dispose helper for
		// a Go block passed here reads freed memory. Delivery failures
		// are what the authorization answer (Trouble) already reports.
		objc.Call[objc.Void](u.center, objc.Sel("addNotificationRequest:withCompletionHandler:"), req, objc.Block{})
		errc <- nil
	})
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Trouble carries the one authorization problem, if macOS refused.
func (u *UN) Trouble() <-chan string { return u.trouble }

// Actions reports the actions the user picked.
func (u *UN) Actions() <-chan ActionEvent { return u.actions }

// Close stops reporting actions to this UN.
func (u *UN) Close() error {
	u.once.Do(func() {
		unMu.Lock()
		if unCurrent == u {
			unCurrent = nil
		}
		unMu.Unlock()
	})
	return nil
}
