package harel

// The C calls of trace context: the library's W3C traceparent written and read, a
// tracestate checked. The binding never parses or formats them itself.

// #include <stdlib.h>
// #include "harel_transport.h"
import "C"

import (
	"strings"
	"unsafe"
)

// traceparentFormat is the traceparent value of the ids and flags
// (harel_traceparent_format); an error for an id of zero bytes only.
func traceparentFormat(traceID [16]byte, spanID [8]byte, flags byte) (string, error) {
	var out [C.HAREL_TRACEPARENT_LEN + 1]C.char
	var cerr *C.harel_error
	s := C.harel_traceparent_format((*C.uint8_t)(unsafe.Pointer(&traceID[0])), (*C.uint8_t)(unsafe.Pointer(&spanID[0])),
		C.uint8_t(flags), &out[0], &cerr)
	if err := check(s, &cerr); err != nil {
		return "", err
	}
	return C.GoStringN(&out[0], C.HAREL_TRACEPARENT_LEN), nil
}

// traceparentParse reads a traceparent value (harel_traceparent_parse): valid false for
// one that is not valid (a NUL byte, which no C string carries, included).
func traceparentParse(value string) (traceID [16]byte, spanID [8]byte, flags byte, valid bool) {
	if strings.IndexByte(value, 0) >= 0 {
		return traceID, spanID, 0, false
	}
	v := C.CString(value)
	defer C.free(unsafe.Pointer(v))
	var cflags C.uint8_t
	var cvalid C.bool
	var cerr *C.harel_error
	s := C.harel_traceparent_parse(v, (*C.uint8_t)(unsafe.Pointer(&traceID[0])), (*C.uint8_t)(unsafe.Pointer(&spanID[0])),
		&cflags, &cvalid, &cerr)
	if check(s, &cerr) != nil || !bool(cvalid) {
		return [16]byte{}, [8]byte{}, 0, false
	}
	return traceID, spanID, byte(cflags), true
}

// tracestateValid says whether value is a valid tracestate (harel_tracestate_valid).
func tracestateValid(value string) bool {
	if strings.IndexByte(value, 0) >= 0 {
		return false
	}
	v := C.CString(value)
	defer C.free(unsafe.Pointer(v))
	var valid C.bool
	var cerr *C.harel_error
	return check(C.harel_tracestate_valid(v, &valid, &cerr), &cerr) == nil && bool(valid)
}
