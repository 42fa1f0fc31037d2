package picker

// The Go side of corral_panel_begin's block (picker_darwin.go). cgo
// allows only declarations in the preamble of a file with //export, so
// the export has a file of its own.

// #include <stdint.h>
import "C"

import "runtime/cgo"

//export corralPanelDone
func corralPanelDone(h C.uintptr_t, response C.long, n C.int, path *C.char) {
	panelDone(cgo.Handle(h), int(response), int(n), path)
}
