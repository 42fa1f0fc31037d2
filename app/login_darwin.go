package app

// Type-checked on Linux (darwincheck); not yet run on macOS.

/*
#cgo CFLAGS: -x objective-c -fobjc-arc
#cgo LDFLAGS: -framework ServiceManagement -framework Foundation
#import <Foundation/Foundation.h>
#import <ServiceManagement/ServiceManagement.h>
#include <stdlib.h>
#include <string.h>

// -1: macOS before 13 (no SMAppService).
static int corral_login_status(void) {
	if (@available(macOS 13.0, *)) {
		@autoreleasepool {
			return (int)[SMAppService mainAppService].status;
		}
	}
	return -1;
}

// Whether the running program has a bundle identifier (runs from
// Corral.app): only then is SMAppService's NotFound a fresh install.
static int corral_login_bundled(void) {
	@autoreleasepool {
		return [[NSBundle mainBundle] bundleIdentifier] != nil ? 1 : 0;
	}
}

// Returns NULL on success, else a malloc'd message.
static char *corral_login_set(int on) {
	if (@available(macOS 13.0, *)) {
		@autoreleasepool {
			NSError *err = nil;
			SMAppService *s = [SMAppService mainAppService];
			BOOL ok = on ? [s registerAndReturnError:&err] : [s unregisterAndReturnError:&err];
			if (ok) {
				return NULL;
			}
			const char *msg = err ? err.localizedDescription.UTF8String : NULL;
			return strdup(msg ? msg : "unknown error");
		}
	}
	return strdup("Open at login needs macOS 13 or later");
}
*/
import "C"

import (
	"errors"
	"unsafe"

	"github.com/corral-dev/corral/app/menu"
)

// smLogin is the main app's SMAppService: registering it adds Corral.app
// to System Settings › General › Login Items.
type smLogin struct{}

var _ LoginItem = smLogin{}

func newLoginItem() LoginItem { return smLogin{} }

func (smLogin) State() (menu.LoginState, error) {
	return loginStateOf(int(C.corral_login_status()), C.corral_login_bundled() != 0), nil
}

func (smLogin) SetEnabled(on bool) error {
	v := C.int(0)
	if on {
		v = 1
	}
	if msg := C.corral_login_set(v); msg != nil {
		defer C.free(unsafe.Pointer(msg))
		return errors.New(C.GoString(msg))
	}
	return nil
}
