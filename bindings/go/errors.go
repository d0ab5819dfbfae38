package harel

import "strconv"

// Status is a harel_status code of the C ABI: 0 is success, positive is "nothing to do",
// negative is an error. [StatusClosed] is the binding's own and never comes from C.
type Status int32

// The status codes. Only the negative ones appear in an [*Error].
const (
	StatusOK          Status = 0   // HAREL_OK
	StatusEmpty       Status = 1   // HAREL_EMPTY: claim found nothing deliverable (Claim returns nil, nil)
	StatusArgument    Status = -1  // HAREL_ERR_ARGUMENT: a bad argument; nothing changed
	StatusDatabase    Status = -2  // HAREL_ERR_DATABASE: I/O, not a database, schema missing, SQL error
	StatusBusy        Status = -3  // HAREL_ERR_BUSY: the write lock was not had within the busy timeout
	StatusLeaseLost   Status = -4  // HAREL_ERR_LEASE_LOST: ack/nack of a message gone or leased to another worker
	StatusConnect     Status = -5  // HAREL_ERR_CONNECT: a libSQL server can't be reached or refused the token
	StatusInterrupted Status = -6  // HAREL_ERR_INTERRUPTED: a claim's wait ended early (its context, Interrupt); nothing claimed
	StatusPanic       Status = -99 // HAREL_ERR_PANIC: a bug in the library, caught at its boundary; close the Transport

	// StatusClosed is the binding's own: the Transport was closed before the call.
	StatusClosed Status = -1000
)

// String gives the C name of the status ("HAREL_ERR_BUSY"), "HAREL_ERR_CLOSED" for
// StatusClosed and "HAREL_UNKNOWN(n)" for any other value.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "HAREL_OK"
	case StatusEmpty:
		return "HAREL_EMPTY"
	case StatusArgument:
		return "HAREL_ERR_ARGUMENT"
	case StatusDatabase:
		return "HAREL_ERR_DATABASE"
	case StatusBusy:
		return "HAREL_ERR_BUSY"
	case StatusLeaseLost:
		return "HAREL_ERR_LEASE_LOST"
	case StatusConnect:
		return "HAREL_ERR_CONNECT"
	case StatusInterrupted:
		return "HAREL_ERR_INTERRUPTED"
	case StatusPanic:
		return "HAREL_ERR_PANIC"
	case StatusClosed:
		return "HAREL_ERR_CLOSED"
	}
	return "HAREL_UNKNOWN(" + strconv.Itoa(int(s)) + ")"
}

// Error is every error this package returns: the status of the failed call and the
// library's message for it (the harel_error the C call handed out, read and freed before
// the method returns), which names the offending parameter by its ABI name (group_id,
// worker_id, visibility...). Errors the binding finds itself, before calling C, have the
// same form.
//
// Match a kind of error with errors.Is and a sentinel, or read the fields with errors.As:
//
//	if errors.Is(err, harel.ErrLeaseLost) { ... }  // someone else holds the message now
//
//	var e *harel.Error
//	if errors.As(err, &e) { log.Print(e.Status, e.Message) }
type Error struct {
	Status  Status
	Message string
}

// Error formats the error as "harel: STATUS_NAME: message".
func (e *Error) Error() string {
	if e.Message == "" {
		return "harel: " + e.Status.String()
	}
	return "harel: " + e.Status.String() + ": " + e.Message
}

// Is reports whether target is an *Error with the same Status, so that every error of a
// kind matches its sentinel: errors.Is(err, ErrBusy).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status
}

// The sentinels, one per error status, for errors.Is. Each matches any *Error with its
// Status; never compare errors with == (the errors returned carry their own message).
var (
	ErrArgument    = &Error{Status: StatusArgument}
	ErrDatabase    = &Error{Status: StatusDatabase}
	ErrBusy        = &Error{Status: StatusBusy}
	ErrLeaseLost   = &Error{Status: StatusLeaseLost}
	ErrConnect     = &Error{Status: StatusConnect}
	ErrInterrupted = &Error{Status: StatusInterrupted} // also matched, with ctx.Err(), by a wait its context ended
	ErrPanic       = &Error{Status: StatusPanic}
	ErrClosed      = &Error{Status: StatusClosed, Message: "the transport is closed"}
)

// argumentError is an ErrArgument found by the binding before the C call.
func argumentError(message string) *Error {
	return &Error{Status: StatusArgument, Message: message}
}
