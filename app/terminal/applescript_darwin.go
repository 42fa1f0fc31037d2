package terminal

import (
	"fmt"
	"unsafe"

	"github.com/progrium/darwinkit/dispatch"
	"github.com/progrium/darwinkit/macos/foundation"
	"github.com/progrium/darwinkit/objc"
)

// runAppleScript compiles and runs src with NSAppleScript on the main
// thread (NSAppleScript is not thread-safe) and waits for it. The caller
// must not be the main thread.
func runAppleScript(src string) error {
	done := make(chan error, 1)
	dispatch.MainQueue().DispatchAsync(func() {
		s := foundation.NewAppleScriptWithSource(src)
		var info unsafe.Pointer // NSDictionary * on failure
		s.ExecuteAndReturnError(unsafe.Pointer(&info))
		if info != nil {
			d := foundation.DictionaryFrom(info)
			msg := objc.Call[string](d, objc.Sel("description"))
			done <- fmt.Errorf("AppleScript failed: %s", msg)
			return
		}
		done <- nil
	})
	return <-done
}
