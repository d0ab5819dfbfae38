package harel

// The bridge from the C clock callback to a Go func() time.Time. This file holds the
// //export and nothing else of C: a preamble of a file with //export may only declare.

// #include <stdint.h>
import "C"

import (
	"fmt"
	"math"
	"runtime/cgo"
	"sync/atomic"
	"time"
)

// clock is the value behind the cgo.Handle that the C options carry as the clock's ctx.
type clock struct {
	now func() time.Time
	// panicked holds the message of a panic in now that no call has reported yet.
	panicked atomic.Pointer[string]
}

// harelGoClock is the C clock: "now" in epoch seconds. C calls it on the thread (so the
// goroutine) of the Transport call under way. A panic must not unwind through the Rust
// frames above it (they would never release the transport's lock): it is recovered, kept
// for the call to report, and answered with NaN, which the library refuses (ErrArgument).
//
//export harelGoClock
func harelGoClock(handle C.uintptr_t) (seconds C.double) {
	c := cgo.Handle(handle).Value().(*clock)
	defer func() {
		if p := recover(); p != nil {
			message := fmt.Sprintf("the clock (WithClock) panicked: %v", p)
			c.panicked.Store(&message)
			seconds = C.double(math.NaN())
		}
	}()
	return C.double(epochSeconds(c.now()))
}

// explain replaces the library's "clock returned a non-finite time" by the panic that
// caused it, if the clock panicked.
func (c *clock) explain(err error) error {
	if e, ok := err.(*Error); ok && e.Status == StatusArgument {
		if message := c.panicked.Swap(nil); message != nil {
			return &Error{Status: StatusArgument, Message: *message + " (" + e.Message + ")"}
		}
	}
	return err
}
