package app

// CGSessionCopyCurrentDictionary returns NULL when the caller is not in a
// Quartz GUI session (Apple: CoreGraphics CGSession.h), e.g. over ssh.

/*
#cgo LDFLAGS: -framework CoreGraphics -framework CoreFoundation
#include <CoreGraphics/CoreGraphics.h>

static int corral_gui_session(void) {
	CFDictionaryRef d = CGSessionCopyCurrentDictionary();
	if (d == NULL) {
		return 0;
	}
	CFRelease(d);
	return 1;
}
*/
import "C"

import "os"

// preflight refuses to start the app without a window server session.
func preflight() error {
	return guiSessionError(C.corral_gui_session() == 1, os.Getenv("SSH_CONNECTION"))
}
