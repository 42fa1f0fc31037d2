package secret

// Type-checked on Linux (darwincheck); not yet run on macOS.

/*
#cgo LDFLAGS: -framework Security
#include <Security/Security.h>

// SecKeychainSetUserInteractionAllowed is deprecated since macOS 10.10 but
// still the one switch that makes a legacy keychain read fail with
// errSecInteractionNotAllowed instead of showing the "allow access" dialog.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static void corral_set_interaction(int allowed) {
	SecKeychainSetUserInteractionAllowed(allowed ? true : false);
}
#pragma clang diagnostic pop
*/
import "C"

// setInteraction allows or disallows Keychain dialogs for this process.
func setInteraction(allowed bool) {
	v := C.int(0)
	if allowed {
		v = 1
	}
	C.corral_set_interaction(v)
}
