package harel

import (
	"strconv"
	"testing"
)

// The Status constants are the C enum's: each Go name is the library's name of its value.
func TestStatusesAreTheLibrarys(t *testing.T) {
	known := []Status{StatusOK, StatusEmpty, StatusArgument, StatusDatabase, StatusBusy,
		StatusLeaseLost, StatusConnect, StatusInterrupted, StatusPanic}
	for _, s := range known {
		if got, want := s.String(), cStatusName(s); got != want {
			t.Errorf("Status(%d).String() = %q, the library names it %q", int32(s), got, want)
		}
	}
	for n := -1000; n <= 2; n++ {
		s := Status(n)
		if name := cStatusName(s); name == "HAREL_UNKNOWN" {
			if s != StatusClosed && s.String() != "HAREL_UNKNOWN("+strconv.Itoa(n)+")" {
				t.Errorf("Status(%d).String() = %q for a status the library does not know", n, s.String())
			}
		} else if s.String() != name {
			t.Errorf("Status(%d).String() = %q, the library names it %q", n, s.String(), name)
		}
	}
	if name := cStatusName(StatusClosed); name != "HAREL_UNKNOWN" {
		t.Errorf("StatusClosed (%d) is a library status now: %s", int32(StatusClosed), name)
	}
}
