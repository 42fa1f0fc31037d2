package notify

// The Go side of corral_request_authorization's block (un_darwin.go). cgo
// allows only declarations in the preamble of a file with //export, so
// the export has a file of its own.

// #include <stdint.h>
import "C"

import "runtime/cgo"

//export corralAuthDone
func corralAuthDone(h C.uintptr_t, granted C.int, domain *C.char, code C.long, desc *C.char) {
	var d, s string
	if domain != nil {
		d = C.GoString(domain)
	}
	if desc != nil {
		s = C.GoString(desc)
	}
	authDone(cgo.Handle(h), granted != 0, d, int(code), s)
}
